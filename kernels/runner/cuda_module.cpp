#include "kernels/runner/cuda_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace isim::kernels::runner {

const CudaModule* cuda_module(std::string* why) {
  static std::once_flag once;
  static const CudaModule* table = nullptr;
  static std::string error;
  std::call_once(once, [] {
#if ISIM_HAVE_CUDA_MODULE
    const char* env = std::getenv("ISIM_CUDA_MODULE");
    const std::string path = env && *env ? env : ISIM_CUDA_MODULE_PATH;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      error = "cannot load the CUDA module " + path + ": " + (e ? e : "unknown error");
      return;
    }
    using Entry = const CudaModule* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, "isim_cuda_module"));
    if (!entry) {
      error = path + " has no isim_cuda_module entry point";
      return;
    }
    table = entry();
#else
    error =
        "this build has no CUDA backend (nvcc was not found when it was configured; rebuild "
        "with -DISIM_CUDA=ON)";
#endif
  });
  if (!table && why) *why = error;
  return table;
}

}  // namespace isim::kernels::runner
