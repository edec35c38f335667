// Entry point of libisim_cuda.so (kernels/runner/cuda_module.h).
#include "kernels/runner/cuda_module.h"

extern "C" const isim::kernels::runner::CudaModule* isim_cuda_module() {
  using namespace isim::kernels::runner;
  static const CudaModule table{&cuda_device_info, &make_cuda_runner, &make_cuda_swap_bench,
                                &make_cuda_tiers};
  return &table;
}
