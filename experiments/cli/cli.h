// The isim command line: one function per verb. Each returns the process exit code
// (0 success, 1 a check the user asked for failed, 2 bad input or usage) and lets InputError
// propagate to main, which prints it and exits 2.
#pragma once

#include <string>
#include <vector>

#include "core/cli_args.h"

namespace isim::exp {

int cmd_run(const Args& args);
int cmd_list(const Args& args);
int cmd_trace(const Args& args);
int cmd_profile(const Args& args);
int cmd_sweep(const Args& args);
int cmd_validate(const Args& args);
int cmd_plan(const Args& args);
int cmd_headroom(const Args& args);
int cmd_model(const Args& args);  // isim model import (experiments/cli/cli_model.cpp)
// isim profile analytic / diff (args after the sub-verb), and show P --plot OUT.png.
int cmd_profile_analytic(const Args& args);
int cmd_profile_diff(const Args& args);
int cmd_profile_import(const Args& args);
int cmd_profile_step(const Args& args);  // experiments/cli/cli_profile_step.cpp
int cmd_profile_plot(const std::string& profile_path, const std::string& png);

}  // namespace isim::exp
