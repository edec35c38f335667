// aiconfigurator's all-reduce tables (calibrate/import_aiconfigurator.h: aiconfigurator_allreduce
// at tp 2, bf16): the input as custom_allreduce_perf.csv (backend vllm_graph), then as the
// folder's nccl_perf_2.29.2.csv (backend nccl), in a copy of tests/data/aiconfigurator-excerpt.
#include "calibrate/import_aiconfigurator.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const fuzz::fs::path fixture =
      fuzz::fs::path(fuzz::source_dir()) / "tests/data/aiconfigurator-excerpt";
  struct Table {
    const char* file;
    const char* backend;
  };
  for (const Table t : {Table{"custom_allreduce_perf.csv", "vllm_graph"},
                        Table{"nccl_perf_2.29.2.csv", "nccl"}}) {
    const fuzz::fs::path dir = fuzz::fixture_copy(std::string("allreduce-") + t.backend, fixture);
    fuzz::write_file(dir / t.file, fuzz::bytes(data, size));
    fuzz::accepted([&] { calib::aiconfigurator_allreduce(dir.string(), 2, "bf16", t.backend); });
  }
  return 0;
}
