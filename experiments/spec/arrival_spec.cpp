// The class workloads' experiment keys (experiments/spec/arrival_spec.h).
#include "experiments/spec/arrival_spec.h"

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::exp {

namespace {

trace::ArrivalSpec::Phase parse_phase(const YAML::Node& n, const std::string& file,
                                      const std::string& key) {
  const YamlMap m(n, file, key, {"duration_s", "users"}, "a map {duration_s, users}");
  trace::ArrivalSpec::Phase p;
  p.duration_s = m.require<double>("duration_s", "seconds");
  const YAML::Node u = m.need("users", "a map of class names to users, e.g. {math: 8}");
  if (!u.IsMap()) m.fail("users", "expected a map of class names to users, e.g. {math: 8}");
  for (const auto& kv : u) {
    const std::string c = yaml_key(kv.first, file, m.key_path("users"));
    const std::string at = m.key_path("users") + "." + c;
    for (const auto& [other, count] : p.users)
      if (other == c) throw InputError(yaml_where(file, kv.first, at) + ": duplicate key");
    p.users.push_back({c, read_as<int64_t>(kv.second, file, at, "an integer number of users")});
  }
  return p;
}

}  // namespace

void parse_arrival_classes(const YamlMap& ar, trace::ArrivalSpec& a) {
  a.salt_copies = ar.get<bool>("salt_copies", a.salt_copies, "true or false");
  a.cycles = ar.get<int64_t>("cycles", a.cycles, "an integer number of cycles");
  if (const YAML::Node ps = ar.value("phases")) {
    if (!ps.IsSequence() || ps.size() == 0)
      ar.fail("phases", "expected a non-empty list of {duration_s, users: {CLASS: N}}");
    a.phases.clear();
    for (size_t i = 0; i < ps.size(); ++i)
      a.phases.push_back(parse_phase(ps[i], ar.file(), ar.key_path(fmt::format("phases[{}]", i))));
  }
  if (a.process != "user-phases") return;
  const trace::ArrivalProblem p = trace::phases_problem(a);
  if (p.key.empty()) return;
  if (p.key.starts_with("phases[")) {  // at the phase: "phases[I]..."
    const size_t i = std::stoul(p.key.substr(7));
    throw InputError(yaml_where(ar.file(), ar.value("phases")[i], ar.key_path(p.key)) + ": " +
                     p.reason);
  }
  ar.fail(p.key, p.reason);
}

void resolved_arrival_classes(const trace::ArrivalSpec& a, YAML::Node& arrival) {
  if (a.salt_copies) arrival["salt_copies"] = true;
  if (a.process != "user-phases") return;
  arrival["sessions_per_user"] = a.sessions_per_user;
  arrival["stagger_s"] = fmt::format("{}", a.stagger_s);
  arrival["max_delay_s"] = fmt::format("{}", a.max_delay_s);
  arrival["advance_min"] = fmt::format("{}", a.advance_min);
  arrival["advance_max"] = fmt::format("{}", a.advance_max);
  for (const auto& p : a.phases) {
    YAML::Node n;
    n["duration_s"] = fmt::format("{}", p.duration_s);
    for (const auto& [c, u] : p.users) n["users"][c] = u;
    arrival["phases"].push_back(n);
  }
  arrival["cycles"] = a.cycles;
}

std::vector<std::string> parse_trace_kinds(const YamlMap& tr) {
  std::vector<std::string> out;
  const YAML::Node n = tr.value("kinds");
  if (!n) return out;
  if (!n.IsSequence() || n.size() == 0)
    tr.fail("kinds", "expected a non-empty list of session classes, e.g. [math]");
  for (size_t i = 0; i < n.size(); ++i)
    out.push_back(read_as<std::string>(n[i], tr.file(), tr.key_path(fmt::format("kinds[{}]", i)),
                                       "a class name"));
  return out;
}

}  // namespace isim::exp
