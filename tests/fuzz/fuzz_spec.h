// The spec harnesses (experiment, sweep, plan) read the input as a spec file the way isim does
// (load_spec_yaml / load_yaml_file on a file of scratch()), with relative paths resolved against
// the checkout's experiments/ folder, so that the committed examples' `../calibrate/...` paths
// reach real profiles and traces.
#pragma once

#include <yaml-cpp/yaml.h>

#include "tests/fuzz/fuzz.h"

namespace isim::fuzz {

inline std::string spec_base_dir() {
  return source_dir() + "/experiments";
}

}  // namespace isim::fuzz
