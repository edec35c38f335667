// Fixtures shared by the sweep tests (test_sweep.cpp, test_sweep_cli.cpp, test_sweep_variants.cpp): a small sweep spec on
// the InferCept profile, the isim binary, and text split into lines.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

namespace isim::test::sweep {

inline std::string profile() {
  return test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// Lines 1-6 of a small sweep spec named `name`: 40 generated sessions, two baseline policies,
// and `sweep:`, whose keys follow from line 7.
inline std::string spec_head(const std::string& name) {
  std::string s = "name: " + name + "\n";          // line 1
  s += "trace: {from: generator, sessions: 40}\n";  // 2
  s += "arrival: {process: poisson, rate: 1}\n";    // 3
  s += "profile: " + profile() + "\n";              // 4
  s += "policies: [discard, swap]\n";               // 5
  s += "sweep:\n";                                  // 6
  return s;
}

// The small sweep: rates x seeds.
inline std::string spec_text(const std::string& extra = "") {
  std::string s = spec_head("small");
  s += "  arrival.rate: [0.5, 2]\n";                // 7
  s += "  seed: [1, 2, 3]\n";                       // 8
  s += extra;
  return s;
}

// Runs the isim binary; returns its exit code, with stdout and stderr captured when asked.
inline int run_isim(const std::string& args, std::string* out = nullptr, std::string* err = nullptr) {
  return test::run_bin("isim", args, out, err);
}

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) v.push_back(l);
  return v;
}

}  // namespace isim::test::sweep
