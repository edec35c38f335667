// Reading a plan spec (experiments/plan.h): the workload, SLOs, search settings, deployments.
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "experiments/plan.h"
#include "experiments/yaml_util.h"
#include "sim/profile.h"
#include "traces/input_error.h"
#include "traces/yaml_where.h"

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
  if (!(v > 0) || !std::isfinite(v)) throw InputError(where(file, n, key) + ": must be > 0");
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
    throw InputError(where(file, n, path) +
                     ": expected a map of METRIC.STAT to an upper limit, e.g. ttft_s.p99: 2");
  for (const auto& kv : n) {
    std::string key = path + "." + read_as<std::string>(kv.first, file, path, "a metric name");
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
    if (s.metric == slo_metrics().size())
      throw InputError(where(file, kv.first, key) + ": unknown SLO metric '" + metric +
                       "'; valid: " + joined(metrics) +
                       " (each with .STAT: " + joined(slo_stats()) + ")");
    bool known = false;
    for (const auto& st : slo_stats()) known = known || st == stat;
    if (!known)
      throw InputError(where(file, kv.first, key) + ": expected " + metric +
                       ".STAT with STAT one of " + joined(slo_stats()));
    for (const auto& o : out)
      if (o.key == s.key) throw InputError(where(file, kv.first, key) + ": listed twice");
    s.limit = positive(kv.second, file, key, "an upper limit in the metric's unit");
    out.push_back(std::move(s));
  }
}

void parse_search(const YAML::Node& n, const std::string& file, SearchSpec& s) {
  check_keys(n, file, "search",
             {"start_rate", "min_rate", "max_rate", "tolerance", "window_s", "warmup", "drain_s",
              "divergence"});
  auto pos = [&](const char* k, double& out, const char* what) {
    if (auto v = n[k]) out = positive(v, file, std::string("search.") + k, what);
  };
  pos("start_rate", s.start_rate, "sessions per second");
  pos("min_rate", s.min_rate, "sessions per second");
  pos("max_rate", s.max_rate, "sessions per second");
  pos("tolerance", s.tolerance, "a fraction");
  pos("window_s", s.window_s, "seconds");
  pos("drain_s", s.drain_s, "seconds");
  pos("divergence", s.divergence, "a fraction of the arrival rate");
  if (auto v = n["warmup"]) {
    s.warmup = read_as<double>(v, file, "search.warmup", "a fraction of the arrival window");
    if (!(s.warmup >= 0 && s.warmup < 1))
      throw InputError(where(file, v, "search.warmup") + ": must be in [0, 1)");
  }
  if (s.tolerance >= 1)
    throw InputError(where(file, n["tolerance"], "search.tolerance") + ": must be < 1");
  if (s.min_rate == 0) s.min_rate = s.start_rate / 64;
  if (!(s.min_rate <= s.start_rate && s.start_rate <= s.max_rate))
    throw InputError(where(file, n, "search") +
                     fmt::format(": expected min_rate <= start_rate <= max_rate, got {} {} {}",
                                 s.min_rate, s.start_rate, s.max_rate));
}

std::string policy_label(const PolicySpec& p) {
  if (p.params.values.empty()) return p.name;
  std::string s = p.name + "(";
  bool first = true;
  for (const auto& [k, v] : p.params.values) {
    s += (first ? "" : ",") + k + "=" + v;
    first = false;
  }
  return s + ")";
}

// A map holding `base`'s entries, then `over`'s (replacing equal keys); the nodes are shared,
// so errors still point at their lines in the plan file.
YAML::Node merged(const YAML::Node& base, const YAML::Node& over) {
  YAML::Node m(YAML::NodeType::Map);
  for (const YAML::Node* src : {&base, &over})
    if (*src && src->IsMap())
      for (const auto& kv : *src) m[kv.first.as<std::string>()] = kv.second;
  return m;
}

}  // namespace

PlanSpec parse_plan(const YAML::Node& root, const std::string& file, const std::string& base_dir) {
  PlanSpec p;
  p.origin = file;
  if (!root || !root.IsMap()) throw InputError(file + ": expected a YAML map of plan keys");
  check_keys(root, file, "",
             {"name", "seeds", "trace", "arrival", "peak_rate", "slo", "search", "engine",
              "policies", "deployments"});
  if (auto n = root["name"]) p.name = read_as<std::string>(n, file, "name", "a string");

  if (auto n = root["seeds"]) {
    if (!n.IsSequence() || n.size() == 0)
      throw InputError(where(file, n, "seeds") + ": expected a non-empty list, e.g. [1, 2, 3]");
    p.seeds.clear();
    for (size_t i = 0; i < n.size(); ++i) {
      std::string key = "seeds[" + std::to_string(i) + "]";
      auto s = read_as<uint64_t>(n[i], file, key, "a non-negative integer");
      for (auto seen : p.seeds)
        if (seen == s) throw InputError(where(file, n[i], key) + ": listed twice");
      p.seeds.push_back(s);
    }
  }

  if (!root["peak_rate"])
    throw InputError(file + ": peak_rate: missing (expected the sessions per second to serve)");
  p.peak_rate = positive(root["peak_rate"], file, "peak_rate", "sessions per second");
  if (!root["slo"]) throw InputError(file + ": slo: missing (expected e.g. ttft_s.p99: 2)");
  parse_slo(root["slo"], file, "slo", p.slos);
  if (p.slos.empty()) throw InputError(where(file, root["slo"], "slo") + ": expected an SLO");
  if (auto n = root["search"]) parse_search(n, file, p.search);

  // The workload, checked by the experiment parser with a placeholder size and rate.
  auto tr = root["trace"];
  if (!tr || !tr.IsMap()) throw InputError(file + ": trace: missing (expected {from, path, ...})");
  for (const char* k : {"sessions", "draw"})
    if (tr[k])
      throw InputError(where(file, tr[k], std::string("trace.") + k) +
                       ": set by the plan (ceil(rate x search.window_s) sessions per run)");
  std::string process = "poisson";
  YAML::Node arrival(YAML::NodeType::Map);
  if (auto ar = root["arrival"]) {
    check_keys(ar, file, "arrival", {"process", "rate"});
    if (ar["rate"])
      throw InputError(where(file, ar["rate"], "arrival.rate") +
                       ": the plan searches the rate; give the rate to serve as peak_rate");
    if (ar["process"]) {
      process = read_as<std::string>(ar["process"], file, "arrival.process", "poisson or replay");
      arrival["process"] = ar["process"];
    }
  }
  arrival["rate"] = 1;
  YAML::Node trace = merged(tr, YAML::Node());
  std::string from = tr["from"] ? read_as<std::string>(tr["from"], file, "trace.from", "a string")
                                : std::string("jsonl");
  const bool generated = from == "generator" || from == "multiturn";
  if (generated) trace["sessions"] = 1;
  if (process == "replay" && generated)
    throw InputError(where(file, root["arrival"], "arrival.process") +
                     ": replay needs a trace file with arrival times; a generator has none");

  auto deps = root["deployments"];
  if (!deps || !deps.IsMap() || deps.size() == 0)
    throw InputError((deps ? where(file, deps, "deployments") : file + ": deployments") +
                     ": expected a map of deployment names to {gpu, profile, tp, "
                     "price_per_gpu_hour}");
  for (const auto& kv : deps) {
    Deployment d;
    d.name = read_as<std::string>(kv.first, file, "deployments", "a deployment name");
    const std::string key = "deployments." + d.name;
    const YAML::Node& dn = kv.second;
    if (!dn.IsMap())
      throw InputError(where(file, dn, key) + ": expected {gpu, profile, tp, price_per_gpu_hour}");
    check_keys(dn, file, key, {"gpu", "profile", "tp", "price_per_gpu_hour", "engine", "policies"});
    if (!dn["profile"]) throw InputError(where(file, dn, key + ".profile") + ": missing");
    d.profile =
        resolve(base_dir, read_as<std::string>(dn["profile"], file, key + ".profile", "a path"));
    if (!fs::is_regular_file(d.profile))
      throw InputError(where(file, dn["profile"], key + ".profile") + ": no such file " +
                       d.profile);
    sim::Profile prof = sim::load_profile(d.profile);
    d.profile_source = prof.provenance_value("source");
    d.gpu = dn["gpu"] ? read_as<std::string>(dn["gpu"], file, key + ".gpu", "a GPU name")
                      : prof.device.name;
    d.tp = prof.model.tp;
    if (auto n = dn["tp"]) {
      int tp = read_as<int32_t>(n, file, key + ".tp", "a tensor-parallel degree");
      if (tp != prof.model.tp)
        throw InputError(where(file, n, key + ".tp") +
                         fmt::format(": the profile models tp {}; give a profile for tp {} "
                                     "(e.g. isim profile analytic ... --tp {})",
                                     prof.model.tp, tp, tp));
    }
    if (!dn["price_per_gpu_hour"])
      throw InputError(where(file, dn, key + ".price_per_gpu_hour") +
                       ": missing (expected the price of one GPU-hour)");
    d.price_per_gpu_hour =
        positive(dn["price_per_gpu_hour"], file, key + ".price_per_gpu_hour", "a price");

    YAML::Node policies = dn["policies"] ? dn["policies"] : root["policies"];
    if (!policies)
      throw InputError(where(file, dn, key + ".policies") +
                       ": missing (give policies: here or at the top level)");
    const std::string pkey = dn["policies"] ? key + ".policies" : std::string("policies");
    if (!policies.IsSequence() || policies.size() == 0)
      throw InputError(where(file, policies, pkey) + ": expected a non-empty list of policies");
    YAML::Node engine = merged(root["engine"], dn["engine"]);
    const size_t di = p.deployments.size();
    p.deployments.push_back(d);
    for (size_t i = 0; i < policies.size(); ++i) {
      YAML::Node y(YAML::NodeType::Map);
      y["name"] = p.name;
      y["seed"] = p.seeds.front();
      y["trace"] = trace;
      y["arrival"] = arrival;
      y["profile"] = dn["profile"];
      y["engine"] = engine;
      y["policy"] = policies[i];
      Candidate c;
      c.deployment = di;
      c.experiment = parse_experiment(y, file, base_dir);
      c.experiment.trace.sessions = 0;
      c.experiment.engine.timeseries_interval_s = 1.0;  // the divergence rule's samples
      c.policy = policy_label(c.experiment.policies.front());
      for (const auto& o : p.candidates)
        if (o.deployment == di && o.policy == c.policy)
          throw InputError(where(file, policies[i], pkey) + ": " + c.policy + " listed twice");
      p.candidates.push_back(std::move(c));
    }
  }
  return p;
}

PlanSpec load_plan(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_file(path, "plan file");
  if (!root || root.IsNull()) throw InputError(path + ": empty plan file");
  for (const auto& o : overrides) apply_override(root, o);
  return parse_plan(root, path, spec_base_dir(path));
}

}  // namespace isim::exp
