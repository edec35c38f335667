// LLMServingSim request datasets (traces/llmservingsim.h: parse_llmservingsim), and the native
// round trip.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"
#include "traces/llmservingsim.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  std::istringstream in(fuzz::bytes(data, size));
  trace::Trace t;
  if (!fuzz::accepted([&] { t = trace::parse_llmservingsim(in, "fuzz.jsonl"); })) return 0;
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
