// A vLLM run folder's meta.json (experiments/validate/validate_vllm.h: parse_vllm_meta on the
// text).
#include "experiments/validate/validate_vllm.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  fuzz::accepted([&] { exp::parse_vllm_meta(fuzz::bytes(data, size), "meta.json"); });
  return 0;
}
