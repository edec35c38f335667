// The --check-invariants / --check-global flags of the verbs that run a fleet (run, sweep),
// translated into cluster::Checks. Kept out of core/cli_args.h, which knows nothing of cluster/.
#pragma once

#include <boost/program_options.hpp>

#include "cluster/cluster.h"
#include "core/input_error.h"

namespace isim::exp {

// `--check-invariants`: the engines after every iteration and the fleet after every instant;
// `--check-global`: the fleet's global invariant alone after every instant (affordable on a
// large fleet, where the engines' O(blocks) checks are not).
inline void add_checks_options(boost::program_options::options_description& opts) {
  opts.add_options()("check-invariants",
                     "check every replica's invariants after each iteration and the fleet's "
                     "after each instant (slow)")(
      "check-global",
      "check the fleet's global invariant (one owner per session and KV, or in "
      "flight between two) after each instant");
}

inline cluster::Checks checks_from(const boost::program_options::variables_map& vm) {
  if (vm.count("check-invariants") && vm.count("check-global"))
    throw InputError(
        "--check-invariants and --check-global: give one of them, not both "
        "(--check-invariants checks the fleet's global invariant too)");
  if (vm.count("check-invariants")) return cluster::Checks::per_iteration();
  if (vm.count("check-global")) return cluster::Checks::global_only();
  return false;
}

}  // namespace isim::exp
