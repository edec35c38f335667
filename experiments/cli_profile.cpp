#include <iostream>

#include "experiments/cli.h"
#include "sim/profile.h"

namespace isim::exp {

int cmd_profile(const Args& args) {
  const char* usage = "usage: isim profile show PROFILE.yaml\n";
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
