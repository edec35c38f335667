// The native JSONL trace reader (traces/jsonl.h: parse_jsonl), and read(write(t)) == t.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  std::istringstream in(fuzz::bytes(data, size));
  trace::Trace t;
  if (!fuzz::accepted([&] { t = trace::parse_jsonl(in, "fuzz.jsonl"); })) return 0;
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
