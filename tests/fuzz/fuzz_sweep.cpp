// Sweep specs (experiments/sweep/sweep.h): what load_sweep does without -p overrides
// (load_spec_yaml, expand_sweep: the base experiment, the run-count cap, each axis value alone,
// every run parsed). A sweep of more than 4096 runs but within the cap is valid and only slow to
// expand (a parse per run): it is skipped, so that the fuzzer's time goes to inputs that can still
// fail.
#include "experiments/spec/experiment.h"
#include "experiments/sweep/sweep.h"
#include "tests/fuzz/fuzz_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("sweep.yaml", data, size);
  fuzz::accepted([&] {
    const YAML::Node root = exp::load_spec_yaml(path);
    const exp::Experiment base = exp::parse_experiment(root, path, fuzz::spec_base_dir());
    double runs = static_cast<double>(base.policies.size());
    for (const auto& axis : base.sweep) runs *= static_cast<double>(axis.values.size());
    if (runs > 4096 && runs <= 1e6) return;
    exp::expand_sweep(root, path, fuzz::spec_base_dir());
  });
  return 0;
}
