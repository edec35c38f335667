// Experiment specs (experiments/spec/experiment.h): what load_experiment does without -p overrides
// (load_spec_yaml, parse_experiment, a sweep refused), with engine_spec and cluster_spec inside.
// An accepted spec's resolved() must load back to the same resolved spec (its contract).
#include "experiments/spec/experiment.h"
#include "tests/fuzz/fuzz_spec.h"

namespace {

std::string resolved_text(const isim::exp::Experiment& e) {
  YAML::Emitter out;
  out << e.resolved();
  return out.c_str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("experiment.yaml", data, size);
  exp::Experiment e;
  if (!fuzz::accepted([&] {
        const YAML::Node root = exp::load_spec_yaml(path);
        e = exp::parse_experiment(root, path, fuzz::spec_base_dir());
        for (const auto& kv : root)
          if (const std::string k = yaml_key(kv.first, path, ""); k == "sweep" || k == "plot")
            throw InputError(path + ": a sweep");  // load_experiment's refusal
      }))
    return 0;
  const std::string text = resolved_text(e);
  exp::Experiment back;
  fuzz::must_accept("parse_experiment of resolved()", [&] {
    back = exp::parse_experiment(YAML::Load(text), "resolved.yaml", fuzz::spec_base_dir());
  });
  if (resolved_text(back) != text) fuzz::broken("resolved() does not load back to itself");
  return 0;
}
