// --threads N, the flag of the verbs that run a fleet (run, sweep): how many threads a run's
// replicas advance on between the fleet's events (cluster::Cluster::set_threads). The results
// are the same bytes for any N; a fleet the windows cannot take runs on one (its run says why).
#pragma once

#include <cstdint>

#include <boost/program_options.hpp>

#include "core/cli_args.h"

namespace isim::exp {

inline constexpr int32_t kMaxThreads = 1024;

inline void add_threads_option(boost::program_options::options_description& opts) {
  opts.add_options()("threads", boost::program_options::value<std::string>(),
                     "threads a run's replicas advance on between the fleet's events, 1..1024 "
                     "(default 1; the results are the same for any number)");
}

// --threads' value (1 when not given); InputError naming the flag otherwise.
inline int32_t threads_from(const boost::program_options::variables_map& vm) {
  return flag_value<int32_t>(vm, "threads", 1, "an integer in 1..1024 (threads)",
                             [](int32_t n) { return n >= 1 && n <= kMaxThreads; });
}

}  // namespace isim::exp
