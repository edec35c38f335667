// A vLLM run folder's timeseries.csv (experiments/validate/validate_vllm.h: parse_vllm_timeseries).
#include <sstream>

#include "experiments/validate/validate_vllm.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  std::istringstream in(fuzz::bytes(data, size));
  fuzz::accepted([&] { exp::parse_vllm_timeseries(in, "timeseries.csv"); });
  return 0;
}
