// Mooncake request traces (traces/mooncake.h: parse_mooncake), and the native round trip.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"
#include "traces/mooncake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  std::istringstream in(fuzz::bytes(data, size));
  trace::Trace t;
  trace::MooncakeReport report;
  if (!fuzz::accepted([&] { t = trace::parse_mooncake(in, "fuzz.jsonl", &report); })) return 0;
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
