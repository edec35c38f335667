// Capacity-plan specs (experiments/plan/plan.h, plan_spec*.cpp): what load_plan does without -p
// overrides (load_yaml_file, the empty-file check, parse_plan, which loads each deployment's
// profile).
#include "core/strict_yaml.h"
#include "experiments/plan/plan.h"
#include "tests/fuzz/fuzz_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("plan.yaml", data, size);
  fuzz::accepted([&] {
    const YAML::Node root = load_yaml_file(path, "plan file");
    if (!root || root.IsNull()) throw InputError(path + ": empty plan file");
    exp::parse_plan(root, path, fuzz::spec_base_dir());
  });
  return 0;
}
