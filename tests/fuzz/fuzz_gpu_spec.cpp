// GPU spec sheets (calibrate/analytic.h: load_gpu_spec, which reads a path); an accepted spec
// goes through analytic_profile with Llama-3.1-8B (tests/fuzz/fuzz_analytic.h).
#include "tests/fuzz/fuzz_analytic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  static const std::string model_path = fuzz::source_dir() + "/calibrate/models/llama-3.1-8b.yaml";
  static const calib::ModelSpec model = calib::load_model(model_path);
  const std::string path = fuzz::write_input("gpu.yaml", data, size);
  calib::GpuSpec gpu;
  if (!fuzz::accepted([&] { gpu = calib::load_gpu_spec(path); })) return 0;
  fuzz::check_analytic(gpu, model, model_path);
  return 0;
}
