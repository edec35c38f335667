// Helpers for tests that read files and run the real binaries: slurp a file, a fresh scratch
// folder, write a file, and running `isim` (or any command line) with its exit code, stdout and
// stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_paths.h"

namespace isim::test {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// An empty folder under the test process's TMPDIR (tests/main.cpp makes one per process).
inline std::filesystem::path scratch(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("isim-test-" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::string write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

// Runs the shell command line CMD with its (last command's) stdout and stderr sent to files
// under TMPDIR; returns the exit code, with stdout and stderr captured when asked.
// Each line of `text` with its whitespace runs collapsed to single spaces (for comparing the
// rows of a printed table whatever its column widths).
inline std::vector<std::string> squeezed_lines(const std::string& text) {
  std::vector<std::string> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string row;
    for (std::string f; fields >> f;) row += (row.empty() ? "" : " ") + f;
    rows.push_back(row);
  }
  return rows;
}

inline int run_shell(const std::string& cmd, std::string* out = nullptr,
                     std::string* err = nullptr) {
  const auto o = std::filesystem::temp_directory_path() / "isim-test-stdout.txt";
  const auto e = std::filesystem::temp_directory_path() / "isim-test-stderr.txt";
  const std::string line = cmd + " > " + o.string() + " 2> " + e.string();
  const int rc = std::system(line.c_str());
  if (out) *out = slurp(o);
  if (err) *err = slurp(e);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Runs `BIN ARGS` from the build's bin folder; returns the exit code, with stdout and stderr
// captured when asked.
inline int run_bin(const std::string& bin, const std::string& args, std::string* out = nullptr,
                   std::string* err = nullptr) {
  return run_shell(bin_dir() + "/" + bin + " " + args, out, err);
}

}  // namespace isim::test
