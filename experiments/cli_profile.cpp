#include <iostream>

#include "experiments/cli.h"
#include "sim/profile.h"

namespace isim::exp {

int cmd_profile(const Args& args) {
  const char* usage =
      "usage: isim profile show PROFILE.yaml [--plot OUT.png]\n"
      "       isim profile analytic --gpu SPEC.yaml --model MODEL.yaml [--tp N] --out P.yaml\n"
      "       isim profile diff BASE.yaml NEW.yaml [--max-regression 5%]\n"
      "       isim profile import --from llmservingsim|aiconfigurator --model M.yaml [--tp N] "
      "IN_DIR --out P.yaml\n";
  if (!args.empty() && args[0] == "analytic")
    return cmd_profile_analytic(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "diff")
    return cmd_profile_diff(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "import")
    return cmd_profile_import(Args(args.begin() + 1, args.end()));
  if (args.size() == 4 && args[0] == "show" && args[2] == "--plot")
    return cmd_profile_plot(args[1], args[3]);
  if (args.size() == 2 && args[0] == "show") {
    std::cout << sim::describe_profile(sim::load_profile(args[1]));
    return 0;
  }
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << usage;
    return 0;
  }
  throw UsageError{"expected 'show PROFILE.yaml'", usage};
}

}  // namespace isim::exp
