// Session-generator configs (traces/generator.h: load_generator_config, which reads a path).
// A config it accepts then generates a few sessions, which the native writer must take and the
// reader read back equal.
#include "tests/fuzz/fuzz_trace.h"
#include "traces/generator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("generator.yaml", data, size);
  trace::GeneratorConfig c;
  if (!fuzz::accepted([&] { c = trace::load_generator_config(path); })) return 0;
  trace::Trace t;
  fuzz::must_accept("generate from a config load_generator_config accepted",
                    [&] { t = trace::generate(c, 3, 1); });
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
