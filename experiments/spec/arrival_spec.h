// The experiment keys of the class workloads (docs/agent-workloads.md "Class workloads and
// shifting users"): `arrival.salt_copies`, `arrival.phases`, `arrival.cycles` and `trace.kinds`.
//
// Contract:
// - parse_arrival_classes reads salt_copies (a boolean), phases (a list of {duration_s,
//   users: {CLASS: N}}) and cycles (an integer) from the `arrival:` map; for process
//   user-phases it then checks them (trace::phases_problem), an InputError naming FILE:LINE and
//   `arrival.KEY`. The other processes ignore phases and cycles (as they ignore users).
// - resolved_arrival_classes writes them back for a resolved spec: salt_copies when true, and
//   phases and cycles for user-phases only (so other specs resolve as they always did).
// - parse_trace_kinds reads `trace.kinds`: a non-empty list of class names (strings).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/knobs.h"
#include "core/strict_yaml.h"
#include "traces/arrival.h"

namespace isim::exp {

// arrival.rate as a knob table (core/knobs.h), for its bound and `isim list`; its lower end's
// refusal says the unit ("must be > 0 sessions per second"). The users keys are checked by
// traces/arrival.h (users x sessions_per_user capped), the phases by phases_problem.
inline constexpr double kMaxArrivalRate = 1e6;
struct ArrivalKnobs {
  double rate = 1.0;
  template <class Visit>
  void knobs(Visit&& k) {
    k("rate", rate, above_upto(0, kMaxArrivalRate), "sessions per second",
      "poisson: new sessions per second");
  }
};

// The keys parse_arrival_classes reads, for the `arrival:` map's valid list.
inline const std::vector<std::string> kArrivalClassKeys = {"salt_copies", "phases", "cycles"};

void parse_arrival_classes(const YamlMap& ar, trace::ArrivalSpec& a);
void resolved_arrival_classes(const trace::ArrivalSpec& a, YAML::Node& arrival);
std::vector<std::string> parse_trace_kinds(const YamlMap& tr);

}  // namespace isim::exp
