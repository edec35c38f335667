// Parsing experiment specs from text in tests: as the file e.yaml in folder /base.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "core/input_error.h"
#include "experiments/spec/experiment.h"

namespace isim::test {

inline exp::Experiment parse(const std::string& text) {
  return exp::parse_experiment(YAML::Load(text), "e.yaml", "/base");
}

// The InputError parsing `text` raises, or "(no error)".
inline std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace isim::test
