// Multi-turn conversation configs (traces/multiturn.h: load_multiturn_config, which reads a
// path). A config it accepts then generates a few conversations, checked like a read trace.
#include "tests/fuzz/fuzz_trace.h"
#include "traces/multiturn.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("multiturn.yaml", data, size);
  trace::MultiTurnConfig c;
  if (!fuzz::accepted([&] { c = trace::load_multiturn_config(path); })) return 0;
  trace::Trace t;
  fuzz::must_accept("generate_multiturn from a config load_multiturn_config accepted",
                    [&] { t = trace::generate_multiturn(c, 3, 1); });
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
