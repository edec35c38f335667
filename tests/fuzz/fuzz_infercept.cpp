// InferCept's workload JSON (traces/infercept.h: import_infercept, which reads a path), and the
// native round trip of what it returns.
#include "tests/fuzz/fuzz_trace.h"
#include "traces/infercept.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("infercept.json", data, size);
  trace::Trace t;
  trace::ImportReport report;
  if (!fuzz::accepted([&] { t = trace::import_infercept(path, &report); })) return 0;
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
