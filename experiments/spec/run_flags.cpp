// isim run's experiment from its flags (run_flags.h).
#include "experiments/spec/run_flags.h"

#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "core/strict_yaml.h"

namespace isim::exp {

namespace {

RunExperiment from_spec_file(const RunSpecFlags& f) {
  std::vector<FlagOverride> flags;  // their errors name the flag, as in the flag form
  if (f.rate) {
    flags.push_back({"arrival.process=poisson", "--rate " + *f.rate});
    flags.push_back({"arrival.rate=" + *f.rate, "--rate " + *f.rate});
  }
  if (f.seed) flags.push_back({"seed=" + *f.seed, "--seed " + *f.seed});
  RunExperiment r{load_experiment(f.spec, f.overrides, flags), f.overrides};
  for (const auto& fl : flags) r.out_keys.push_back(fl.kv);
  return r;
}

RunExperiment from_flag_form(const RunSpecFlags& f) {
  RunExperiment r;
  YamlOrigins origins;  // the flag form's values are checked like a spec's, naming the flag
  // A flag's text as the spec value at `slot`, named "--FLAG TEXT" in errors.
  auto from_flag = [&](YAML::Node slot, const std::string& flag, const std::string& text) {
    const std::string origin = "--" + flag + " " + text;
    slot = parse_yaml_value(text, origin);
    origins.add(slot, origin);
  };
  // A flag's text taken as it is (a name or a path), named "--FLAG TEXT" in errors.
  auto as_text = [&](YAML::Node slot, const std::string& flag, const std::string& text) {
    slot = text;
    origins.add(slot, "--" + flag + " " + text);
  };
  YAML::Node y;
  y["name"] = std::filesystem::path(f.trace).stem().string();
  if (f.seed) from_flag(y["seed"], "seed", *f.seed);
  if (f.from)
    as_text(y["trace"]["from"], "from", *f.from);
  else
    y["trace"]["from"] = "jsonl";
  as_text(y["trace"]["path"], "trace", f.trace);
  if (f.rate) {
    y["arrival"]["process"] = "poisson";
    from_flag(y["arrival"]["rate"], "rate", *f.rate);
  } else {
    y["arrival"]["process"] = "replay";
  }
  as_text(y["profile"], "profile", f.profile);
  as_text(y["policy"], "policy", f.policy);
  if (f.scheduler && !f.scheduler->empty())
    as_text(y["engine"]["scheduler"], "scheduler", *f.scheduler);
  if (f.executor && !f.executor->empty()) as_text(y["executor"], "executor", *f.executor);
  r.out_keys.push_back("policy=" + f.policy);
  for (const auto& [name, value] :
       {std::pair{"rate", &f.rate}, std::pair{"seed", &f.seed},
        std::pair{"scheduler", &f.scheduler}, std::pair{"executor", &f.executor}})
    if (*value) r.out_keys.push_back(std::string(name) + "=" + **value);
  r.out_keys.insert(r.out_keys.end(), f.overrides.begin(), f.overrides.end());
  apply_overrides(y, "command line", f.overrides, origins);
  r.experiment = parse_experiment(y, "command line", ".");
  return r;
}

}  // namespace

RunExperiment load_run_experiment(const RunSpecFlags& f) {
  return f.spec.empty() ? from_flag_form(f) : from_spec_file(f);
}

}  // namespace isim::exp
