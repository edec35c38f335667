// run_script: spawn a child with posix_spawnp and wait for it; the contract is in run_script.h.
#include "experiments/run/run_script.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

extern char** environ;

namespace isim::exp {

int run_script(const std::vector<std::string>& args, bool quiet_stdout, bool quiet_stderr) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet_stdout) posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (quiet_stderr) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string find_plot_python(std::string* tried) {
  std::vector<std::string> candidates = {"python3", "/usr/bin/python3"};
  if (const char* p = std::getenv("ISIM_PYTHON"); p && *p) candidates = {p};
  if (tried) tried->clear();
  for (const auto& py : candidates) {
    if (run_script({py, "-c", "import matplotlib"}, true, true) == 0) return py;
    if (tried) {
      if (!tried->empty()) *tried += ", ";
      *tried += py;
    }
  }
  return "";
}

}  // namespace isim::exp
