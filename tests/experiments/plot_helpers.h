// Helpers the tests of the experiments' plot scripts share: the python3 that has matplotlib
// (empty when none: the tests then skip), and running a script of experiments/ with it.
#pragma once

#include <string>

#include "experiments/sweep/sweep.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

namespace isim::test {

inline const std::string& plot_python() {
  static const std::string py = exp::find_plot_python();
  return py;
}

// Runs experiments/`script` with `args`, after `env` (assignments such as "PYTHONPATH=... ");
// its exit code, stdout and stderr (when asked).
inline int run_plot_script(const std::string& script, const std::string& args,
                           std::string* out = nullptr, std::string* err = nullptr,
                           const std::string& env = "") {
  return run_shell(
      env + plot_python() + " " + source_dir() + "/experiments/plots/" + script + " " + args, out,
      err);
}

}  // namespace isim::test
