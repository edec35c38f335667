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

#include "core/strict_yaml.h"
#include "traces/arrival.h"

namespace isim::exp {

// The keys parse_arrival_classes reads, for the `arrival:` map's valid list.
inline const std::vector<std::string> kArrivalClassKeys = {"salt_copies", "phases", "cycles"};

void parse_arrival_classes(const YamlMap& ar, trace::ArrivalSpec& a);
void resolved_arrival_classes(const trace::ArrivalSpec& a, YAML::Node& arrival);
std::vector<std::string> parse_trace_kinds(const YamlMap& tr);

}  // namespace isim::exp
