// Model shapes (calibrate/model.h: load_model, which reads a path); an accepted model goes
// through analytic_profile on the H200 spec (tests/fuzz/fuzz_analytic.h).
#include "tests/fuzz/fuzz_analytic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  static const calib::GpuSpec gpu =
      calib::load_gpu_spec(fuzz::source_dir() + "/calibrate/gpus/H200.yaml");
  const std::string path = fuzz::write_input("model.yaml", data, size);
  calib::ModelSpec m;
  if (!fuzz::accepted([&] { m = calib::load_model(path); })) return 0;
  fuzz::check_analytic(gpu, m, path);
  return 0;
}
