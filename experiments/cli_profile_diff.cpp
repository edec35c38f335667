// isim profile diff: the CI regression check between two profiles of the same model shape.
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "calibrate/diff.h"
#include "experiments/cli.h"
#include "sim/profile.h"

namespace isim::exp {

namespace {

const char* kDiffUsage =
    "usage: isim profile diff BASE.yaml NEW.yaml [--max-regression 5%] [--top N]\n"
    "  Compares every grid point both profiles share (and linear coefficients, and swap curves\n"
    "  as bandwidth) and lists the worst slowdowns first (--top rows, default 20, 0 = all).\n"
    "  Exit 1 when any point is slower by more than --max-regression, 0 otherwise, 2 on bad\n"
    "  input (different model shapes or forward forms).\n";

}  // namespace

int cmd_profile_diff(const Args& args) {
  std::vector<std::string> files;
  double threshold = 0.05;
  size_t top = 20;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kDiffUsage);
      return 0;
    }
    if (a == "--max-regression" || a == "--top") {
      if (i + 1 >= args.size()) throw UsageError{fmt::format("{} needs a value", a), kDiffUsage};
      const std::string& v = args[++i];
      if (a == "--max-regression") {
        threshold = calib::parse_percent(v, "--max-regression");
      } else {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || n < 0)
          throw UsageError{fmt::format("--top: expected a count, got '{}'", v), kDiffUsage};
        top = static_cast<size_t>(n);
      }
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError{fmt::format("unknown option '{}'", a), kDiffUsage};
    } else {
      files.push_back(a);
    }
  }
  if (files.size() != 2) throw UsageError{"expected BASE and NEW profiles", kDiffUsage};
  const sim::Profile base = sim::load_profile(files[0]);
  const sim::Profile next = sim::load_profile(files[1]);
  const calib::DiffReport r = calib::diff_profiles(base, next);
  fmt::print("{}", calib::format_diff(r, threshold, top, files[0], files[1]));
  return r.regressions(threshold) > 0 ? 1 : 0;
}

}  // namespace isim::exp
