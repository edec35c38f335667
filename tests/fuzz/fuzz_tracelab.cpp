// TraceLab coding-agent rounds (traces/tracelab.h: parse_tracelab), read both ways (growth and
// appended inputs), and the native round trip.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"
#include "traces/tracelab.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string text = fuzz::bytes(data, size);
  for (auto mode : {trace::TraceLabInput::growth, trace::TraceLabInput::appended}) {
    std::istringstream in(text);
    trace::Trace t;
    trace::TraceLabReport report;
    if (!fuzz::accepted([&] { t = trace::parse_tracelab(in, "fuzz.jsonl", &report, mode); }))
      continue;
    fuzz::check_trace_round_trip(std::move(t));
  }
  return 0;
}
