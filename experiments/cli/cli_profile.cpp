#include <iostream>

#include <boost/program_options.hpp>

#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "sim/profile.h"

namespace isim::exp {

namespace po = boost::program_options;

namespace {

const Help kProfileHelp{
    "usage: isim profile show PROFILE.yaml [--plot OUT.png]\n"
    "       isim profile analytic --gpu SPEC.yaml --model MODEL.yaml [--tp N] --out P.yaml\n"
    "       isim profile diff BASE.yaml NEW.yaml [--max-regression 5%]\n"
    "       isim profile import --from llmservingsim|aiconfigurator --model M.yaml [--tp N]\n"
    "                           IN_DIR --out P.yaml\n"
    "       isim profile step PROFILE.yaml [--dp D] [--ep] [--decode B] [--kv K] ...\n",
    "Profiles are the cost model's measurements (calibrate/profiles/). Each sub-verb takes\n"
    "--help.\n",
    "  isim profile show calibrate/profiles/h200-llama-3.1-8b.aiconfigurator.yaml\n"
    "  isim profile diff calibrate/profiles/h200-llama-3.1-8b.analytic.yaml \\\n"
    "      calibrate/profiles/h200-llama-3.1-8b.aiconfigurator.yaml\n"
    "  isim profile step calibrate/profiles/gb300-kimi-k2.analytic.yaml --dp 8 --ep --decode 64\n"};

const Help kShowHelp{
    "usage: isim profile show PROFILE.yaml [--plot OUT.png]\n",
    "Summarizes a profile: its device, model, forward-pass form and cost at a few batch sizes,\n"
    "and the swap bandwidth the cost model uses at a few copy sizes (clamped values are\n"
    "marked). --plot also draws T(x) by batched tokens, the decode attention cost by context\n"
    "and the copy bandwidth curves (experiments/plots/plot_profile.py; needs matplotlib).\n",
    "  isim profile show calibrate/profiles/cpu-tiny.yaml\n"
    "  isim profile show calibrate/profiles/h200-llama-3.1-8b.aiconfigurator.yaml --plot "
    "h200.png\n"};

int cmd_profile_show(const Args& args) {
  po::options_description opts, hidden;
  std::string path, png;
  opts.add_options()("help,h", "show this help")("plot", po::value(&png),
                                                 "also draw the profile to OUT.png");
  hidden.add_options()("profile", po::value(&path), "profile YAML");
  po::positional_options_description pos;
  pos.add("profile", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kShowHelp, opts);
  if (path.empty()) throw usage_error("needs PROFILE.yaml", kShowHelp);
  if (vm.count("plot")) {
    check_not_input(png, "--plot", {path});
    return cmd_profile_plot(path, png);
  }
  std::cout << sim::describe_profile(sim::load_profile(path));
  return 0;
}

}  // namespace

int cmd_profile(const Args& args) {
  const Args rest = args.empty() ? Args{} : Args(args.begin() + 1, args.end());
  if (!args.empty() && args[0] == "analytic") return cmd_profile_analytic(rest);
  if (!args.empty() && args[0] == "diff") return cmd_profile_diff(rest);
  if (!args.empty() && args[0] == "import") return cmd_profile_import(rest);
  if (!args.empty() && args[0] == "show") return cmd_profile_show(rest);
  if (!args.empty() && args[0] == "step") return cmd_profile_step(rest);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    po::options_description opts;
    opts.add_options()("help,h", "show this help");
    return print_help(kProfileHelp, opts);
  }
  throw usage_error(args.empty() ? "missing sub-command" : "unknown sub-command '" + args[0] + "'",
                    kProfileHelp);
}

}  // namespace isim::exp
