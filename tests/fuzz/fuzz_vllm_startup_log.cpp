// A vLLM server's startup log (calibrate/vllm_startup_log.h: parse_vllm_startup_log on the
// text), as `isim validate --kv-logs` reads it.
#include "calibrate/vllm_startup_log.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  fuzz::accepted([&] { calib::parse_vllm_startup_log(fuzz::bytes(data, size), "x.log"); });
  return 0;
}
