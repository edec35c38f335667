// isim profile diff: the CI regression check between two profiles of the same model shape.
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "calibrate/diff.h"
#include "core/cli_help.h"
#include "experiments/cli/cli.h"
#include "sim/profile.h"

namespace isim::exp {

namespace {

const Help kDiffHelp{
    "usage: isim profile diff BASE.yaml NEW.yaml [--max-regression 5%] [--top N]\n",
    "Compares every grid point both profiles share (and linear coefficients, and swap curves\n"
    "as bandwidth) and lists the worst slowdowns first. Exit 1 when any point is slower by\n"
    "more than --max-regression, 0 otherwise, 2 on bad input (different model shapes or\n"
    "forward forms).\n",
    "  isim profile diff calibrate/profiles/h200-llama-3.1-8b.analytic.yaml \\\n"
    "      calibrate/profiles/h200-llama-3.1-8b.aiconfigurator.yaml --top 5\n"
    "  isim profile diff base.yaml new.yaml --max-regression 2%\n"};

}  // namespace

int cmd_profile_diff(const Args& args) {
  namespace po = boost::program_options;
  std::vector<std::string> files;
  po::options_description opts, hidden;
  opts.add_options()("help,h", "show this help")(
      "max-regression", po::value<std::string>(),
      "the slowdown that fails the check, e.g. 5% (default) or 0.05")(
      "top", po::value<std::string>(), "rows listed, worst first (default 20; 0: all)");
  hidden.add_options()("files", po::value(&files)->composing(), "BASE and NEW");
  po::positional_options_description pos;
  pos.add("files", -1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kDiffHelp, opts);
  const double threshold =
      vm.count("max-regression")
          ? calib::parse_percent(vm["max-regression"].as<std::string>(), "--max-regression")
          : 0.05;
  size_t top = 20;
  if (vm.count("top")) {
    const std::string& v = vm["top"].as<std::string>();
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 0)
      throw usage_error(fmt::format("--top: expected a count, got '{}'", v), kDiffHelp);
    top = static_cast<size_t>(n);
  }
  if (files.size() != 2) throw usage_error("expected BASE and NEW profiles", kDiffHelp);
  const sim::Profile base = sim::load_profile(files[0]);
  const sim::Profile next = sim::load_profile(files[1]);
  const calib::DiffReport r = calib::diff_profiles(base, next);
  fmt::print("{}", calib::format_diff(r, threshold, top, files[0], files[1]));
  return r.regressions(threshold) > 0 ? 1 : 0;
}

}  // namespace isim::exp
