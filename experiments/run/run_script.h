// run_script: runs a helper program (a plot script under python, or python itself) as a child
// process and waits for it. The one place isim spawns children; `isim sweep`, `isim plan` and
// `isim profile show --plot` all use it.
//
// Contract:
//   - args[0] is looked up on PATH (posix_spawnp); args, in order, are the child's argv, and the
//     child gets this process's environment. args must not be empty.
//   - quiet_stdout / quiet_stderr send that stream to /dev/null; otherwise the child writes to
//     the stream it inherits from isim.
//   - Blocks until the child exits (waitpid, retried on EINTR).
//   - Returns the child's exit status; 128 + N when signal N ended it; 127 when it could not be
//     started or waited for (as a shell reports a missing command).
//   - Prints nothing and throws nothing: callers word their own messages from the status.
//   find_plot_python: the interpreter plot scripts run under (below), found with run_script.
#pragma once

#include <string>
#include <vector>

namespace isim::exp {

int run_script(const std::vector<std::string>& args, bool quiet_stdout, bool quiet_stderr);

// The first of `python3` (on PATH) and /usr/bin/python3 (or only $ISIM_PYTHON, when set) that
// imports matplotlib; "" when none does, with the ones tried in `tried`.
std::string find_plot_python(std::string* tried = nullptr);

}  // namespace isim::exp
