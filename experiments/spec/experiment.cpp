#include "experiments/spec/experiment.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/out_path.h"
#include "core/strict_yaml.h"
#include "experiments/spec/arrival_spec.h"
#include "experiments/spec/engine_spec.h"
#include "experiments/spec/sweep_variants.h"
#include "live/live_executor.h"
#include "traces/limits.h"
#include "traces/sources.h"

namespace isim::exp {

namespace fs = std::filesystem;

// Absolute, so that config.resolved.yaml reloads from wherever it was written.
std::string resolve_spec_path(const std::string& base_dir, const std::string& p) {
  if (p.empty()) return p;
  fs::path q = fs::path(p).is_absolute() ? fs::path(p) : fs::path(base_dir) / p;
  return fs::absolute(q).lexically_normal().string();
}

namespace {

// Shortest round-trip text, so resolved specs read 0.9 rather than 0.90000000000000002.
std::string num(double v) {
  return fmt::format("{}", v);
}

// `{name: X, key: value, ...}`: the name, and every other key a parameter (its text).
// "missing WHAT" without the name; "expected A_WHAT" for a name that is not a scalar.
void read_named(const YAML::Node& n, const std::string& file, const std::string& key,
                const char* what, const char* a_what, std::string& name, Params& params) {
  if (!n["name"]) throw InputError(yaml_where(file, n, key + ".name") + ": missing " + what);
  for (const auto& kv : n) {
    const auto k = yaml_key(kv.first, file, key);
    if (k == "name") {
      name = read_as<std::string>(kv.second, file, key + ".name", a_what);
      continue;
    }
    const auto v = read_as<std::string>(kv.second, file, key + "." + k, "a scalar parameter");
    if (!params.values.emplace(k, v).second)
      throw InputError(yaml_where(file, kv.first, key + "." + k) + ": duplicate key");
    params.at[k] = yaml_where(file, kv.second, key + "." + k);
  }
}

PolicySpec parse_policy(const YAML::Node& n, const std::string& file, const std::string& key) {
  PolicySpec ps;
  ps.params.where = key;
  if (n.IsScalar()) {
    ps.name = read_as<std::string>(n, file, key, "a policy name");
  } else if (n.IsMap()) {
    read_named(n, file, key, "policy name", "a policy name", ps.name, ps.params);
  } else {
    throw InputError(yaml_where(file, n, key) + ": expected a policy name or {name: ..., params}");
  }
  // Fail now, with the file's position, rather than when the run starts.
  policy::policy_registry().create(ps.name, yaml_where(file, n, key), ps.params);
  return ps;
}

// `sweep:` is a map from dotted override paths to non-empty lists of scalars, and `variants`.
// Whether each path and value is valid is checked when the sweep is expanded
// (experiments/sweep/sweep.h), by applying it like `-p` and parsing the result.
void parse_sweep(const YAML::Node& sw, const std::string& file, Experiment& e) {
  if (sw.IsNull()) return;
  if (!sw.IsMap())
    throw InputError(yaml_where(file, sw, "sweep") +
                     ": expected a map of dotted keys to lists, e.g. arrival.rate: [1, 2]");
  for (const auto& kv : sw) {
    SweepAxis ax;
    ax.key = yaml_key(kv.first, file, "sweep");
    ax.line = kv.first.Mark().line >= 0 ? kv.first.Mark().line + 1 : 0;
    const std::string key = "sweep." + ax.key;
    const std::string at = yaml_where(file, kv.first, key);
    if (ax.key.empty() || ax.key.front() == '.' || ax.key.back() == '.' ||
        ax.key.find("..") != std::string::npos)
      throw InputError(at + ": expected a dotted key such as arrival.rate");
    auto head = ax.key.substr(0, ax.key.find('.'));
    if (head == "policy" || head == "policies")
      throw InputError(at +
                       ": policies are swept by listing them under policies:, each with its "
                       "parameters (e.g. {name: min-waste, estimator: history})");
    if (head == "sweep" || head == "plot" || head == "name")
      throw InputError(at + ": '" + head + "' cannot be swept");
    for (const auto& other : e.sweep)
      if (other.key == ax.key) throw InputError(at + ": listed twice");
    if (const std::string* o = yaml_origin(kv.second)) ax.origin = *o;
    if (ax.key == "variants") {  // named bundles of overrides (experiments/spec/sweep_variants.h)
      e.sweep.push_back(parse_sweep_variants(kv.first, kv.second, file));
      e.sweep.back().origin = ax.origin;
      continue;
    }
    const auto& vs = kv.second;
    if (!vs.IsSequence() || vs.size() == 0)
      throw InputError(yaml_where(file, vs, key) +
                       ": expected a non-empty list of values, e.g. [1, 2]");
    std::set<std::string> seen;  // not a scan per value: a list may be long
    for (size_t i = 0; i < vs.size(); ++i) {
      std::string vkey = key + "[" + std::to_string(i) + "]";
      auto v = read_as<std::string>(vs[i], file, vkey, "a scalar value");
      if (v.find_first_of("\r\n\"") != std::string::npos)
        throw InputError(yaml_where(file, vs[i], vkey) +
                         ": a swept value cannot hold quotes or newlines");
      if (!seen.insert(v).second)
        throw InputError(yaml_where(file, vs[i], vkey) + ": '" + v + "' listed twice");
      ax.values.push_back(v);
    }
    e.sweep.push_back(std::move(ax));
  }
  check_variant_keys(e.sweep, file);
}

void parse_plot(const YamlMap& root, Experiment& e) {
  e.has_plot = true;
  if (root.value("plot").IsNull()) return;
  const YamlMap pl = root.map("plot", {"latency_target_s", "waste_rate"});
  e.plot.latency_target_s = pl.get<double>("latency_target_s", 0, "seconds per token");
  if (pl.has("latency_target_s") && !(e.plot.latency_target_s > 0))
    pl.fail("latency_target_s", "must be > 0 seconds per token");
  if (pl.has("waste_rate")) {
    e.plot.has_waste_rate = true;
    e.plot.waste_rate = pl.get<double>("waste_rate", 0, "an arrival rate in sessions/s");
    e.plot.waste_rate_where = pl.where("waste_rate");
    if (!(e.plot.waste_rate > 0) || !std::isfinite(e.plot.waste_rate))
      pl.fail("waste_rate", "must be one of the swept arrival.rate values (sessions/s, > 0)");
  }
}

void parse_trace(const YamlMap& root, const std::string& base_dir, TraceSpec& t) {
  std::vector<std::string> keys = {"from", "path"};
  for (const auto& k : knob_names<trace::WorkloadSpec>()) keys.push_back(k);
  keys.emplace_back("kinds");
  const YamlMap tr = root.map("trace", keys, "{from, path, ...}");
  t.from = tr.get<std::string>("from", t.from, "a string");
  const bool generated = trace::trace_source_registry().create(t.from, tr.where("from"))->generated;
  t.path = resolve_spec_path(base_dir, tr.get<std::string>("path", "", "a path"));
  if (t.path.empty() && !generated) tr.fail("path", "missing (expected a trace file)");
  KnobReader read{tr};  // the numeric keys and their bounds: traces/workload.h
  t.knobs(read);
  if (tr.has("think_time_s") && t.from != "multiturn")
    tr.fail("think_time_s", "only a multiturn trace has think times to set");
  if (tr.has("rate_scale") && t.from != "agents")
    tr.fail("rate_scale", "only the agents source has rates to scale");
  if (tr.has("block_tokens") && t.from != "dynamo-agentic")
    tr.fail("block_tokens", "only a dynamo-agentic trace leaves its block size to the run");
  t.kinds = parse_trace_kinds(tr);
  if (t.max_context == 1) tr.fail("max_context", "must be >= 2 (a prompt token and one output)");
  if (generated && t.sessions <= 0)
    tr.fail("sessions", "a generator needs sessions > 0 (how many to generate)");
}

// The users process's keys; like `rate` for replay, the other processes ignore them.
void parse_users(const YamlMap& ar, trace::ArrivalSpec& a) {
  a.users = ar.get<int64_t>("users", a.users, "an integer number of users");
  a.sessions_per_user = ar.get<int64_t>("sessions_per_user", a.sessions_per_user, "an integer");
  for (auto [k, out] : {std::pair<const char*, double*>{"stagger_s", &a.stagger_s},
                        {"max_delay_s", &a.max_delay_s}})
    *out = ar.get<double>(k, *out, "seconds");
  for (auto [k, out] : {std::pair<const char*, double*>{"advance_min", &a.advance_min},
                        {"advance_max", &a.advance_max}})
    *out = ar.get<double>(k, *out, "a fraction in [0, 1]");
  if (a.process != "users") return;
  if (!ar.has("users"))
    ar.fail("users", "missing (process users needs how many users replay sessions at once)");
  if (const trace::ArrivalProblem p = trace::users_problem(a); !p.key.empty())
    ar.fail(p.key, p.reason);
}

void parse_arrival(const YamlMap& root, trace::ArrivalSpec& a) {
  if (!root.has("arrival")) return;
  std::vector<std::string> keys = {"process",   "rate",        "users",       "sessions_per_user",
                                   "stagger_s", "max_delay_s", "advance_min", "advance_max"};
  keys.insert(keys.end(), kArrivalClassKeys.begin(), kArrivalClassKeys.end());
  const YamlMap ar = root.map("arrival", keys);
  a.process = ar.get<std::string>("process", a.process,
                                  "one of " + trace::arrival_registry().names_joined());
  trace::arrival_registry().get(a.process, ar.where("process"));
  if (ar.has("rate")) {
    a.rate = ar.require<double>("rate", "sessions per second");
    if (!(a.rate > 0)) ar.fail("rate", "must be > 0 sessions per second");
    ArrivalKnobs k;  // the upper end (experiments/spec/arrival_spec.h)
    KnobReader read{ar};
    k.knobs(read);
  }
  parse_users(ar, a);
  parse_arrival_classes(ar, a);
}

void parse_validate(const YamlMap& root, const std::string& base_dir, Experiment& e) {
  if (!root.has("validate")) return;
  const YamlMap v = root.map("validate", {"model", "quick"});
  e.has_validate = true;
  e.validate.model =
      resolve_spec_path(base_dir, v.get<std::string>("model", "", "a model YAML path"));
  if (!e.validate.model.empty() && !fs::exists(e.validate.model))
    v.fail("model", "no such file " + e.validate.model);
  e.validate.quick = v.get<bool>("quick", e.validate.quick, "true or false");
}

void parse_executor(const YamlMap& root, Experiment& e) {
  const YAML::Node n = root.value("executor");
  if (!n) return;
  const std::string& file = root.file();
  e.executor_params.where = "executor";
  if (n.IsMap())
    read_named(n, file, "executor", "executor name", "an executor name", e.executor,
               e.executor_params);
  else
    e.executor = read_as<std::string>(n, file, "executor", "an executor name");
  live::executor_registry().get(e.executor, yaml_where(file, n, "executor"));
  live::check_executor(e.executor, e.executor_params);
}

void parse_policies(const YamlMap& root, Experiment& e) {
  const std::string& file = root.file();
  if (root.has("policy") && root.has("policies"))
    root.fail("policies", "give either policy or policies, not both");
  if (auto n = root.value("policy")) e.policies.push_back(parse_policy(n, file, "policy"));
  if (auto n = root.value("policies")) {
    if (!n.IsSequence() || n.size() == 0)
      root.fail("policies", "expected a non-empty list of policies");
    for (size_t i = 0; i < n.size(); ++i)
      e.policies.push_back(parse_policy(n[i], file, "policies[" + std::to_string(i) + "]"));
  }
  if (e.policies.empty())
    root.fail("policy", "missing; valid: " + policy::policy_registry().names_joined());
}

}  // namespace

Experiment parse_experiment(const YAML::Node& node, const std::string& file,
                            const std::string& base_dir) {
  Experiment e;
  e.origin = file;
  if (!node || !node.IsMap()) throw InputError(file + ": expected a YAML map of experiment keys");
  const YamlMap root(
      node, file, "",
      {"name", "seed", "trace", "arrival", "profile", "engine", "cluster", "executor", "policy",
       "policies", "metrics", "slo", "sweep", "plot", "validate"});
  e.name = root.get<std::string>("name", e.name, "a string");
  if (const std::string why = name_problem(e.name); !why.empty()) root.fail("name", why);
  e.seed = root.get<uint64_t>("seed", e.seed, "a non-negative integer");
  parse_trace(root, base_dir, e.trace);
  parse_arrival(root, e.arrival);
  e.arrival.seed = e.seed;
  e.profile =
      resolve_spec_path(base_dir, root.require<std::string>("profile", "a profile YAML path"));
  parse_engine(root, "engine", e.engine);
  parse_validate(root, base_dir, e);
  parse_executor(root, e);
  parse_policies(root, e);
  e.slo = parse_run_slo(root);
  e.turn_slo = take_turn_slo(e.slo);
  if (auto sw = root.value("sweep")) parse_sweep(sw, file, e);
  if (root.has("plot")) parse_plot(root, e);
  if (root.has("metrics")) {
    std::vector<std::string> keys = knob_names<MetricsKnobs>();
    keys.emplace_back("shifts_s");
    keys.emplace_back("bench_json");
    const YamlMap m = root.map("metrics", keys);
    static_assert(kMinTimeSeriesInterval_s == kMinMetricInterval_s);
    parse_run_metrics(m, e.turn_slo, e.run_metrics);  // checks both keys' bounds
    e.engine.timeseries_interval_s =
        m.get<double>("timeseries_interval_s", e.engine.timeseries_interval_s, "seconds");
  }
  // Last: the groups start from the experiment's complete engine settings.
  e.cluster = parse_cluster(root, base_dir, e.engine, parse_engine);
  if (e.cluster.given && e.cluster.replicas() > 1 && e.executor != "sim")
    root.fail("cluster", "live executors run on one replica only (executor " + e.executor + ")");
  return e;
}

YAML::Node load_spec_yaml(const std::string& path) {
  YAML::Node root = load_yaml_file(path, "experiment file");
  if (!root || root.IsNull()) throw InputError(path + ": empty experiment file");
  return root;
}

std::string spec_base_dir(const std::string& path) {
  std::string base = fs::path(path).parent_path().string();
  return base.empty() ? "." : base;
}

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides,
                           const std::vector<FlagOverride>& flags) {
  YAML::Node root = load_spec_yaml(path);
  YamlOrigins origins;
  apply_overrides(root, path, overrides, origins);
  for (const auto& f : flags) {
    check_override_root(root, path, f.kv);
    apply_override(root, f.kv, &origins, f.origin);
  }
  auto e = parse_experiment(root, path, spec_base_dir(path));
  for (const auto& kv : root) {
    const std::string k = yaml_key(kv.first, path, "");
    if (k == "sweep" || k == "plot") {
      std::string msg = yaml_where(path, kv.first, k);
      msg += ": this spec is a sweep; run it with `isim sweep ";
      msg += path;
      msg += "`";
      throw InputError(msg);
    }
  }
  return e;
}

YAML::Node Experiment::resolved() const {
  YAML::Node r;
  r["name"] = name;
  r["seed"] = seed;
  YAML::Node t;
  t["from"] = trace.from;
  t["path"] = trace.path;
  if (trace.limit > 0) t["limit"] = trace.limit;
  if (trace.draw > 0) t["draw"] = trace.draw;
  if (trace.sessions > 0) t["sessions"] = trace.sessions;
  if (trace.max_context > 0) t["max_context"] = trace.max_context;
  if (trace.think_time_s > 0) t["think_time_s"] = num(trace.think_time_s);
  if (trace.intercept_scale != 1) t["intercept_scale"] = num(trace.intercept_scale);
  if (trace.rate_scale != 1) t["rate_scale"] = num(trace.rate_scale);
  if (trace.block_tokens > 0) t["block_tokens"] = trace.block_tokens;
  for (const auto& k : trace.kinds) t["kinds"].push_back(k);
  r["trace"] = t;
  r["arrival"]["process"] = arrival.process;
  r["arrival"]["rate"] = num(arrival.rate);
  if (arrival.process == "users") {  // only then, so other specs resolve as they always did
    r["arrival"]["users"] = arrival.users;
    r["arrival"]["sessions_per_user"] = arrival.sessions_per_user;
    r["arrival"]["stagger_s"] = num(arrival.stagger_s);
    r["arrival"]["max_delay_s"] = num(arrival.max_delay_s);
    r["arrival"]["advance_min"] = num(arrival.advance_min);
    r["arrival"]["advance_max"] = num(arrival.advance_max);
  }
  YAML::Node ar = r["arrival"];
  resolved_arrival_classes(arrival, ar);
  r["profile"] = profile;
  r["engine"] = resolved_engine(engine);
  if (cluster.given) r["cluster"] = resolved_cluster(cluster);
  if (executor_params.values.empty()) {
    r["executor"] = executor;
  } else {
    r["executor"]["name"] = executor;
    for (const auto& [k, v] : executor_params.values) r["executor"][k] = v;
  }
  YAML::Node ps(YAML::NodeType::Sequence);
  for (const auto& p : policies) {
    if (p.params.values.empty()) {
      ps.push_back(p.name);
    } else {
      YAML::Node m;
      m["name"] = p.name;
      for (const auto& [k, v] : p.params.values) m[k] = v;
      ps.push_back(m);
    }
  }
  r["policies"] = ps;
  r["metrics"]["timeseries_interval_s"] = num(engine.timeseries_interval_s);
  if (!slo.empty() || !turn_slo.empty()) {
    YAML::Node y = slo.empty() ? YAML::Node(YAML::NodeType::Map) : resolved_slo(slo);
    add_resolved_turn_slo(y, turn_slo);
    r["slo"] = y;
  }
  add_resolved_run_metrics(r["metrics"], run_metrics);
  for (const auto& ax : sweep) r["sweep"][ax.key] = axis_yaml(ax);
  if (has_validate) {
    r["validate"]["model"] = validate.model;
    r["validate"]["quick"] = validate.quick;
  }
  if (has_plot) {
    YAML::Node pl(YAML::NodeType::Map);
    if (plot.latency_target_s > 0) pl["latency_target_s"] = num(plot.latency_target_s);
    if (plot.has_waste_rate) pl["waste_rate"] = num(plot.waste_rate);
    r["plot"] = pl;
  }
  return r;
}

}  // namespace isim::exp
