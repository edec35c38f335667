// Claude Code sessions in kv-cache-tester's JSON (traces/weka.h: import_weka, which reads a
// path: the input is one trace file), and the native round trip.
#include "tests/fuzz/fuzz_trace.h"
#include "traces/weka.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("trace_fuzz.json", data, size);
  trace::Trace t;
  trace::WekaReport report;
  if (!fuzz::accepted([&] { t = trace::import_weka(path, &report); })) return 0;
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
