// Reading a plan spec (experiments/plan/plan.h): the workload, SLOs, search settings, routers,
// deployments (the disaggregation axes: plan_spec_disagg.cpp).
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/out_path.h"
#include "core/strict_yaml.h"
#include "experiments/spec/cluster_spec.h"
#include "experiments/spec/plan_spec.h"
#include "experiments/spec/plan_spec_parts.h"
#include "policies/routers.h"
#include "sim/profile.h"
#include "traces/limits.h"
#include "traces/sources.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

std::string resolve(const std::string& base_dir, const std::string& p) {
  fs::path q = fs::path(p).is_absolute() ? fs::path(p) : fs::path(base_dir) / p;
  return fs::absolute(q).lexically_normal().string();
}

double positive(const YAML::Node& n, const std::string& file, const std::string& key,
                const char* what) {
  double v = read_as<double>(n, file, key, what);
  if (!(v > 0) || !std::isfinite(v)) throw InputError(yaml_where(file, n, key) + ": must be > 0");
  return v;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// `slo:` holds METRIC.STAT keys, flat (ttft_s.p99: 2) or nested (ttft_s: {p99: 2}), as `-p
// slo.ttft_s.p99=2` writes them.
void parse_slo(const YAML::Node& n, const std::string& file, const std::string& path,
               std::vector<Slo>& out) {
  if (!n.IsMap())
    throw InputError(yaml_where(file, n, path) +
                     ": expected a map of METRIC.STAT to an upper limit, e.g. ttft_s.p99: 2");
  for (const auto& kv : n) {
    std::string key = path + "." + yaml_key(kv.first, file, path);
    if (kv.second.IsMap()) {
      parse_slo(kv.second, file, key, out);
      continue;
    }
    std::string name = key.substr(4);  // without "slo."
    auto dot = name.rfind('.');
    std::string metric = name.substr(0, dot == std::string::npos ? name.size() : dot);
    std::string stat = dot == std::string::npos ? "" : name.substr(dot + 1);
    Slo s;
    s.key = name;
    s.stat = stat;
    s.metric = slo_metrics().size();
    std::vector<std::string> metrics;
    for (size_t i = 0; i < slo_metrics().size(); ++i) {
      metrics.push_back(slo_metrics()[i].name);
      if (slo_metrics()[i].name == metric) s.metric = i;
    }
    for (size_t i = 0; i < turn_slo_metrics().size(); ++i) {
      metrics.push_back(turn_slo_metrics()[i]);
      if (s.metric == slo_metrics().size() && turn_slo_metrics()[i] == metric) {
        s.metric = i;
        s.turn = true;
      }
    }
    if (!s.turn && s.metric == slo_metrics().size())
      throw InputError(yaml_where(file, kv.first, key) + ": unknown SLO metric '" + metric +
                       "'; valid: " + joined(metrics) +
                       " (each with .STAT: " + joined(slo_stats()) + ")");
    bool known = false;
    for (const auto& st : slo_stats()) known = known || st == stat;
    if (!known)
      throw InputError(yaml_where(file, kv.first, key) + ": expected " + metric +
                       ".STAT with STAT one of " + joined(slo_stats()));
    for (const auto& o : out)
      if (o.key == s.key) throw InputError(yaml_where(file, kv.first, key) + ": listed twice");
    s.limit = positive(kv.second, file, key, "an upper limit in the metric's unit");
    if (const std::string why = slo_limit_problem(s.limit); !why.empty())
      throw InputError(yaml_where(file, kv.second, key) + ": " + why);
    out.push_back(std::move(s));
  }
}

void parse_search(const YamlMap& root, SearchSpec& s) {
  if (!root.has("search")) return;
  const YamlMap m = root.map("search", knob_names<SearchSpec>());
  KnobReader read{m};
  s.knobs(read);
  if (s.min_rate == 0) s.min_rate = s.start_rate / 64;
  if (!(s.min_rate <= s.start_rate && s.start_rate <= s.max_rate))
    throw InputError(yaml_where(m.file(), m.node(), "search") +
                     fmt::format(": expected min_rate <= start_rate <= max_rate, got {} {} {}",
                                 s.min_rate, s.start_rate, s.max_rate));
}

// A poisson plan's fleet runs draw ceil(peak_rate x window_s) sessions: at most kMaxSessions.
void check_peak_sessions(const YamlMap& root, const PlanSpec& p, const std::string& process) {
  if (process == "replay") return;
  const double n = std::ceil(p.peak_rate * p.search.window_s);
  if (n <= static_cast<double>(trace::kMaxSessions)) return;
  const bool window =
      root.has("search") && root.map("search", knob_names<SearchSpec>()).has("window_s");
  const std::string why = fmt::format(
      "peak_rate x search.window_s must be <= {} sessions (a fleet run at the peak draws "
      "ceil(rate x window_s) sessions; the most a run holds), got {} x {}",
      trace::kMaxSessions, p.peak_rate, p.search.window_s);
  if (window) root.map("search", knob_names<SearchSpec>()).fail("window_s", why);
  root.fail("peak_rate", why);
}

// One `routers:` entry: a name, or {name: ..., params}.
RouterChoice parse_router(const YAML::Node& n, const std::string& file, const std::string& key) {
  RouterChoice r;
  ComponentEntry c = parse_component_entry(n, file, key, "router");
  r.name = std::move(c.name);
  r.params = std::move(c.params);
  // Build one now, so that an unknown name or parameter fails with the file's line.
  const std::string at = yaml_where(file, n, key);
  Params check = r.params;
  check.where = at;
  policy::router_registry().create(r.name, at, check);
  r.label = component_label(r.name, r.params);
  return r;
}

void parse_routers(const YamlMap& root, std::vector<RouterChoice>& out) {
  const YAML::Node n = root.value("routers");
  if (!n) return;
  if (!n.IsSequence() || n.size() == 0)
    root.fail("routers",
              "expected a non-empty list of routers, e.g. [session-affinity, "
              "round-robin]; valid: " +
                  policy::router_registry().names_joined());
  out.clear();
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string key = "routers[" + std::to_string(i) + "]";
    RouterChoice r = parse_router(n[i], root.file(), key);
    for (const auto& o : out)
      if (o.label == r.label)
        throw InputError(yaml_where(root.file(), n[i], key) + ": " + r.label + " listed twice");
    out.push_back(std::move(r));
  }
}

// A map holding `base`'s entries, then `over`'s (replacing equal keys); the nodes are shared,
// so errors still point at their lines in the plan file.
YAML::Node merged(const YAML::Node& base, const YAML::Node& over, const std::string& file,
                  const std::string& path) {
  YAML::Node m(YAML::NodeType::Map);
  for (const YAML::Node* src : {&base, &over})
    if (*src && src->IsMap())
      for (const auto& kv : *src) m[yaml_key(kv.first, file, path)] = kv.second;
  return m;
}

void parse_seeds(const YamlMap& root, std::vector<uint64_t>& seeds) {
  const YAML::Node n = root.value("seeds");
  if (!n) return;
  if (!n.IsSequence() || n.size() == 0)
    root.fail("seeds", "expected a non-empty list, e.g. [1, 2, 3]");
  seeds.clear();
  for (size_t i = 0; i < n.size(); ++i) {
    std::string key = "seeds[" + std::to_string(i) + "]";
    auto s = read_as<uint64_t>(n[i], root.file(), key, "a non-negative integer");
    for (auto seen : seeds)
      if (seen == s) throw InputError(yaml_where(root.file(), n[i], key) + ": listed twice");
    seeds.push_back(s);
  }
}

// The workload: the plan's trace and arrival, for the experiment parser to check with a
// placeholder size and rate.
struct PlanWorkload {
  YAML::Node trace;
  YAML::Node arrival{YAML::NodeType::Map};
};

PlanWorkload parse_workload(const YamlMap& root) {
  const std::string& file = root.file();
  auto tr = root.value("trace");
  if (!tr || !tr.IsMap()) root.fail("trace", "missing (expected {from, path, ...})");
  for (const char* k : {"sessions", "draw"})
    if (tr[k])
      throw InputError(yaml_where(file, tr[k], std::string("trace.") + k) +
                       ": set by the plan (ceil(rate x search.window_s) sessions per run)");
  PlanWorkload w;
  std::string process = "poisson";
  if (root.has("arrival")) {
    const YamlMap ar = root.map("arrival", {"process", "rate"});
    if (ar.has("rate"))
      ar.fail("rate",
              "the plan searches the rate; remove it and give the highest rate to serve as "
              "peak_rate");
    if (ar.has("process")) {
      process =
          ar.require<std::string>("process", "one of " + trace::arrival_registry().names_joined());
      if (process == "users" || process == "user-phases")
        ar.fail("process", process +
                               " is a closed loop whose load is its number of users; the plan "
                               "searches an arrival rate (poisson or replay)");
      w.arrival["process"] = ar.value("process");
    }
  }
  w.arrival["rate"] = 1;
  w.trace = merged(tr, YAML::Node(), file, "trace");
  const std::string from = tr["from"]
                               ? read_as<std::string>(tr["from"], file, "trace.from", "a string")
                               : std::string("jsonl");
  const bool generated = trace::trace_source_registry()
                             .create(from, yaml_where(file, tr["from"], "trace.from"))
                             ->generated;
  if (generated) w.trace["sessions"] = 1;
  if (process == "replay" && generated)
    root.map("arrival", {"process", "rate"})
        .fail("process", "replay needs a trace file with arrival times; a generator has none");
  return w;
}

Deployment parse_deployment(const YamlMap& dn, const std::string& base_dir) {
  Deployment d;
  d.name = dn.path().substr(dn.path().find('.') + 1);
  d.profile = resolve(base_dir, dn.require<std::string>("profile", "a path"));
  if (!fs::is_regular_file(d.profile)) dn.fail("profile", "no such file " + d.profile);
  sim::Profile prof = sim::load_profile(d.profile);
  d.profile_source = prof.provenance_value("source");
  d.gpu = dn.get<std::string>("gpu", prof.device.name, "a GPU name");
  d.tp = prof.model.tp;
  if (dn.has("tp")) {
    int tp = dn.require<int32_t>("tp", "a tensor-parallel degree");
    // Bounded before it is compared: a degree below 1 is no profile's to give.
    if (tp < 1) dn.fail("tp", fmt::format("must be >= 1 (GPUs per replica), got {}", tp));
    if (tp != prof.model.tp)
      dn.fail("tp", fmt::format("the profile models tp {}; give a profile for tp {} "
                                "(e.g. isim profile analytic ... --tp {})",
                                prof.model.tp, tp, tp));
  }
  d.price_per_gpu_hour = positive(dn.need("price_per_gpu_hour", "the price of one GPU-hour"),
                                  dn.file(), dn.key_path("price_per_gpu_hour"), "a price");
  ReplicaGroup g;  // the cluster group's reader and checks
  parse_parallel_keys(dn, g);
  check_parallel_profile(g, prof, dn.where("dp"), dn.where("ep"));
  d.par = g.par;
  return d;
}

// One candidate per policy of deployment `di` (its own policies, else the top-level ones).
void add_candidates(const YamlMap& root, const YamlMap& dn, const PlanWorkload& w, size_t di,
                    const std::string& base_dir, PlanSpec& p) {
  const std::string& file = root.file();
  const bool own = dn.has("policies");
  YAML::Node policies = own ? dn.value("policies") : root.value("policies");
  if (!policies) dn.fail("policies", "missing (give policies: here or at the top level)");
  const std::string pkey = own ? dn.key_path("policies") : std::string("policies");
  if (!policies.IsSequence() || policies.size() == 0)
    throw InputError(yaml_where(file, policies, pkey) + ": expected a non-empty list of policies");
  YAML::Node engine = merged(root.value("engine"), dn.value("engine"), file, "engine");
  for (size_t i = 0; i < policies.size(); ++i) {
    YAML::Node y(YAML::NodeType::Map);
    y["name"] = p.name;
    y["seed"] = p.seeds.front();
    y["trace"] = w.trace;
    y["arrival"] = w.arrival;
    y["profile"] = dn.value("profile");
    y["engine"] = engine;
    y["policy"] = policies[i];
    Candidate c;
    c.deployment = di;
    c.experiment = parse_experiment(y, file, base_dir);
    c.experiment.trace.sessions = 0;
    c.experiment.engine.timeseries_interval_s = 1.0;  // the divergence rule's samples
    c.policy =
        component_label(c.experiment.policies.front().name, c.experiment.policies.front().params);
    for (const auto& o : p.candidates)
      if (o.deployment == di && o.policy == c.policy)
        throw InputError(yaml_where(file, policies[i], pkey) + ": " + c.policy + " listed twice");
    p.candidates.push_back(std::move(c));
  }
}

}  // namespace

ComponentEntry parse_component_entry(const YAML::Node& n, const std::string& file,
                                     const std::string& key, const std::string& what) {
  ComponentEntry r;
  r.params.where = key;
  if (n.IsScalar()) {
    r.name = read_as<std::string>(n, file, key, "a " + what + " name");
  } else if (n.IsMap()) {
    if (!n["name"])
      throw InputError(yaml_where(file, n, key + ".name") + ": missing " + what + " name");
    for (const auto& kv : n) {
      const auto k = yaml_key(kv.first, file, key);
      const auto v = read_as<std::string>(kv.second, file, key + "." + k, "a scalar");
      if (k == "name") {
        r.name = v;
      } else {
        r.params.values[k] = v;
      }
    }
  } else {
    throw InputError(yaml_where(file, n, key) + ": expected a " + what +
                     " name or {name: ..., params}");
  }
  return r;
}

std::string component_label(const std::string& name, const Params& params) {
  if (params.values.empty()) return name;
  std::string s = name + "(";
  bool first = true;
  for (const auto& [k, v] : params.values) {
    s += (first ? "" : ",") + k + "=" + v;
    first = false;
  }
  return s + ")";
}

PlanSpec parse_plan(const YAML::Node& node, const std::string& file, const std::string& base_dir) {
  PlanSpec p;
  p.origin = file;
  if (!node || !node.IsMap()) throw InputError(file + ": expected a YAML map of plan keys");
  const YamlMap root(node, file, "",
                     {"name", "seeds", "trace", "arrival", "peak_rate", "slo", "search", "engine",
                      "policies", "routers", "pd_splits", "planners", "cluster", "deployments"});
  p.name = root.get<std::string>("name", p.name, "a string");
  if (const std::string why = name_problem(p.name); !why.empty()) root.fail("name", why);
  parse_seeds(root, p.seeds);
  root.need("peak_rate", "the sessions per second to serve");
  PlanKnobs pk;
  KnobReader read{root};
  pk.knobs(read);
  p.peak_rate = pk.peak_rate;
  parse_slo(root.need("slo", "e.g. ttft_s.p99: 2"), file, "slo", p.slos);
  if (p.slos.empty()) root.fail("slo", "expected an SLO");
  parse_search(root, p.search);
  parse_routers(root, p.routers);
  parse_disagg_axes(root, p);
  const PlanWorkload w = parse_workload(root);
  check_peak_sessions(root, p, w.arrival["process"] ? w.arrival["process"].Scalar() : "poisson");

  auto deps = root.value("deployments");
  if (!deps || !deps.IsMap() || deps.size() == 0)
    root.fail("deployments",
              "expected a map of deployment names to {gpu, profile, tp, price_per_gpu_hour}");
  for (const auto& kv : deps) {
    const std::string key = "deployments." + yaml_key(kv.first, file, "deployments");
    const YamlMap dn(kv.second, file, key,
                     {"gpu", "profile", "tp", "price_per_gpu_hour", "engine", "policies", "dp",
                      "ep", "ep_overlap", "expert_skew"},
                     "{gpu, profile, tp, price_per_gpu_hour}");
    p.deployments.push_back(parse_deployment(dn, base_dir));
    if (p.deployments.back().parallel())
      for (const auto& s : p.pd_splits)
        if (!s.mixed())
          dn.fail(dn.has("dp") ? "dp" : "ep",
                  "DP/EP groups in a disaggregated fleet are not simulated; pd_splits lists " +
                      s.label + " (plan this deployment with pd_splits: [mixed])");
    add_candidates(root, dn, w, p.deployments.size() - 1, base_dir, p);
  }
  return p;
}

PlanSpec load_plan(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_file(path, "plan file");
  if (!root || root.IsNull()) throw InputError(path + ": empty plan file");
  YamlOrigins origins;
  apply_overrides(root, path, overrides, origins);
  return parse_plan(root, path, spec_base_dir(path));
}

}  // namespace isim::exp
