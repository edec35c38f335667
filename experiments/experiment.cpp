#include "experiments/experiment.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "experiments/yaml_util.h"
#include "live/live_executor.h"
#include "traces/input_error.h"
#include "traces/sources.h"
#include "traces/yaml_where.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

// Absolute, so that config.resolved.yaml reloads from wherever it was written.
std::string resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty()) return p;
  fs::path q = fs::path(p).is_absolute() ? fs::path(p) : fs::path(base_dir) / p;
  return fs::absolute(q).lexically_normal().string();
}

// Shortest round-trip text, so resolved specs read 0.9 rather than 0.90000000000000002.
std::string num(double v) {
  return fmt::format("{}", v);
}

PolicySpec parse_policy(const YAML::Node& n, const std::string& file, const std::string& key) {
  PolicySpec ps;
  ps.params.where = key;
  if (n.IsScalar()) {
    ps.name = read_as<std::string>(n, file, key, "a policy name");
  } else if (n.IsMap()) {
    if (!n["name"]) throw InputError(where(file, n, key + ".name") + ": missing policy name");
    for (const auto& kv : n) {
      auto k = kv.first.as<std::string>();
      if (k == "name") {
        ps.name = read_as<std::string>(kv.second, file, key + ".name", "a policy name");
      } else {
        ps.params.values[k] =
            read_as<std::string>(kv.second, file, key + "." + k, "a scalar parameter");
      }
    }
  } else {
    throw InputError(where(file, n, key) + ": expected a policy name or {name: ..., params}");
  }
  // Fail now, with the file's position, rather than when the run starts.
  policy::policy_registry().get(ps.name, where(file, n, key));
  policy::policy_registry().create(ps.name, where(file, n, key), ps.params);
  return ps;
}

// `sweep:` is a map from dotted override paths to non-empty lists of scalars. Whether each path
// and value is valid is checked when the sweep is expanded (experiments/sweep.h), by applying it
// like `-p` and parsing the result.
void parse_sweep(const YAML::Node& sw, const std::string& file, Experiment& e) {
  if (sw.IsNull()) return;
  if (!sw.IsMap())
    throw InputError(where(file, sw, "sweep") +
                     ": expected a map of dotted keys to lists, e.g. arrival.rate: [1, 2]");
  for (const auto& kv : sw) {
    SweepAxis ax;
    ax.key = read_as<std::string>(kv.first, file, "sweep", "a dotted key such as arrival.rate");
    ax.line = kv.first.Mark().line >= 0 ? kv.first.Mark().line + 1 : 0;
    std::string key = "sweep.";
    key += ax.key;
    if (ax.key.empty() || ax.key.front() == '.' || ax.key.back() == '.' ||
        ax.key.find("..") != std::string::npos)
      throw InputError(where(file, kv.first, key) + ": expected a dotted key such as arrival.rate");
    auto head = ax.key.substr(0, ax.key.find('.'));
    if (head == "policy" || head == "policies")
      throw InputError(where(file, kv.first, key) +
                       ": policies are swept by listing them under policies:, each with its "
                       "parameters (e.g. {name: min-waste, estimator: history})");
    if (head == "sweep" || head == "plot" || head == "name")
      throw InputError(where(file, kv.first, key) + ": '" + head + "' cannot be swept");
    for (const auto& other : e.sweep)
      if (other.key == ax.key) throw InputError(where(file, kv.first, key) + ": listed twice");
    const auto& vs = kv.second;
    if (!vs.IsSequence() || vs.size() == 0)
      throw InputError(where(file, vs, key) + ": expected a non-empty list of values, e.g. [1, 2]");
    for (size_t i = 0; i < vs.size(); ++i) {
      std::string vkey = key + "[" + std::to_string(i) + "]";
      auto v = read_as<std::string>(vs[i], file, vkey, "a scalar value");
      if (v.find_first_of("\r\n\"") != std::string::npos)
        throw InputError(where(file, vs[i], vkey) +
                         ": a swept value cannot hold quotes or newlines");
      for (const auto& seen : ax.values)
        if (seen == v) throw InputError(where(file, vs[i], vkey) + ": '" + v + "' listed twice");
      ax.values.push_back(v);
    }
    e.sweep.push_back(std::move(ax));
  }
}

void parse_plot(const YAML::Node& pl, const std::string& file, Experiment& e) {
  e.has_plot = true;
  if (pl.IsNull()) return;
  check_keys(pl, file, "plot", {"latency_target_s"});
  if (auto n = pl["latency_target_s"]) {
    e.plot.latency_target_s =
        read_as<double>(n, file, "plot.latency_target_s", "seconds per token");
    if (!(e.plot.latency_target_s > 0))
      throw InputError(where(file, n, "plot.latency_target_s") + ": must be > 0 seconds per token");
  }
}

}  // namespace

Experiment parse_experiment(const YAML::Node& root, const std::string& file,
                            const std::string& base_dir) {
  Experiment e;
  e.origin = file;
  if (!root || !root.IsMap()) throw InputError(file + ": expected a YAML map of experiment keys");
  check_keys(root, file, "",
             {"name", "seed", "trace", "arrival", "profile", "engine", "executor", "policy",
              "policies", "metrics", "sweep", "plot", "validate"});
  if (auto n = root["name"]) e.name = read_as<std::string>(n, file, "name", "a string");
  if (auto n = root["seed"]) e.seed = read_as<uint64_t>(n, file, "seed", "a non-negative integer");

  auto tr = root["trace"];
  if (!tr) throw InputError(file + ": trace: missing (expected {from, path, ...})");
  check_keys(tr, file, "trace",
             {"from", "path", "limit", "draw", "sessions", "max_context", "think_time_s",
              "intercept_scale"});
  if (auto n = tr["from"]) e.trace.from = read_as<std::string>(n, file, "trace.from", "a string");
  const bool generated =
      trace::trace_source_registry().create(e.trace.from, where(file, tr["from"], "trace.from"))
          ->generated;
  if (auto n = tr["path"])
    e.trace.path = resolve(base_dir, read_as<std::string>(n, file, "trace.path", "a path"));
  if (e.trace.path.empty() && !generated)
    throw InputError(where(file, tr, "trace.path") + ": missing (expected a trace file)");
  auto count = [&](const char* k, int64_t& out) {
    if (auto n = tr[k]) {
      out = read_as<int64_t>(n, file, std::string("trace.") + k, "an integer");
      if (out < 0) throw InputError(where(file, n, std::string("trace.") + k) + ": must be >= 0");
    }
  };
  count("limit", e.trace.limit);
  count("draw", e.trace.draw);
  count("sessions", e.trace.sessions);
  count("max_context", e.trace.max_context);
  if (auto n = tr["think_time_s"]) {
    e.trace.think_time_s = read_as<double>(n, file, "trace.think_time_s", "seconds");
    if (!(e.trace.think_time_s > 0))
      throw InputError(where(file, n, "trace.think_time_s") + ": must be > 0 seconds");
    if (e.trace.from != "multiturn")
      throw InputError(where(file, n, "trace.think_time_s") +
                       ": only a multiturn trace has think times to set");
  }
  if (auto n = tr["intercept_scale"]) {
    e.trace.intercept_scale = read_as<double>(n, file, "trace.intercept_scale", "a factor");
    if (!(e.trace.intercept_scale > 0) || !std::isfinite(e.trace.intercept_scale))
      throw InputError(where(file, n, "trace.intercept_scale") + ": must be a finite factor > 0");
  }
  if (e.trace.max_context == 1)
    throw InputError(where(file, tr["max_context"], "trace.max_context") +
                     ": must be >= 2 (a prompt token and one output)");
  if (generated && e.trace.sessions <= 0)
    throw InputError(where(file, tr, "trace.sessions") +
                     ": a generator needs sessions > 0 (how many to generate)");

  if (auto ar = root["arrival"]) {
    check_keys(ar, file, "arrival", {"process", "rate"});
    if (auto n = ar["process"])
      e.arrival.process = read_as<std::string>(
          n, file, "arrival.process",
          ("one of " + trace::arrival_registry().names_joined()).c_str());
    trace::arrival_registry().get(e.arrival.process, where(file, ar["process"], "arrival.process"));
    if (auto n = ar["rate"]) {
      e.arrival.rate = read_as<double>(n, file, "arrival.rate", "sessions per second");
      if (!(e.arrival.rate > 0))
        throw InputError(where(file, n, "arrival.rate") + ": must be > 0 sessions per second");
    }
  }
  e.arrival.seed = e.seed;

  if (!root["profile"])
    throw InputError(file + ": profile: missing (expected a profile YAML path)");
  e.profile = resolve(base_dir, read_as<std::string>(root["profile"], file, "profile", "a path"));

  if (auto en = root["engine"]) {
    check_keys(
        en, file, "engine",
        {"scheduler", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
         "activation_reserve_gib", "swap_space_gib", "gpu_blocks", "cpu_blocks", "prefix_caching"});
    auto& c = e.engine;
    if (auto n = en["scheduler"]) {
      c.scheduler = read_as<std::string>(n, file, "engine.scheduler", "a scheduler name");
      sim::scheduler_registry().get(c.scheduler, where(file, n, "engine.scheduler"));
    }
    auto positive = [&](const char* k, auto& out, const char* what) {
      if (auto n = en[k]) {
        out = read_as<std::decay_t<decltype(out)>>(n, file, std::string("engine.") + k, what);
        if (!(out > 0))
          throw InputError(where(file, n, std::string("engine.") + k) + ": must be > 0");
      }
    };
    positive("max_num_seqs", c.max_num_seqs, "an integer");
    positive("max_num_batched_tokens", c.max_num_batched_tokens, "an integer");
    positive("gpu_memory_utilization", c.gpu_memory_utilization, "a fraction in (0, 1]");
    if (c.gpu_memory_utilization > 1)
      throw InputError(where(file, en["gpu_memory_utilization"], "engine.gpu_memory_utilization") +
                       ": must be <= 1");
    auto non_negative = [&](const char* k, auto& out, const char* what) {
      if (auto n = en[k]) {
        out = read_as<std::decay_t<decltype(out)>>(n, file, std::string("engine.") + k, what);
        if (out < 0)
          throw InputError(where(file, n, std::string("engine.") + k) + ": must be >= 0");
      }
    };
    non_negative("activation_reserve_gib", c.activation_reserve_gib, "GiB");
    non_negative("swap_space_gib", c.swap_space_gib, "GiB");
    non_negative("gpu_blocks", c.gpu_blocks, "an integer (0 = derive from memory)");
    if (auto n = en["prefix_caching"])
      c.prefix_caching = read_as<bool>(n, file, "engine.prefix_caching", "true or false");
    if (auto n = en["cpu_blocks"])
      c.cpu_blocks = read_as<int64_t>(n, file, "engine.cpu_blocks",
                                      "an integer (-1 = derive from swap_space_gib)");
  }

  if (auto v = root["validate"]) {
    check_keys(v, file, "validate", {"model", "quick"});
    e.has_validate = true;
    if (auto n = v["model"])
      e.validate.model =
          resolve(base_dir, read_as<std::string>(n, file, "validate.model", "a model YAML path"));
    if (auto n = v["quick"]) e.validate.quick = read_as<bool>(n, file, "validate.quick", "true or false");
  }
  if (auto n = root["executor"]) {
    e.executor_params.where = "executor";
    if (n.IsMap()) {
      if (!n["name"]) throw InputError(where(file, n, "executor.name") + ": missing executor name");
      for (const auto& kv : n) {
        auto k = kv.first.as<std::string>();
        if (k == "name")
          e.executor = read_as<std::string>(kv.second, file, "executor.name", "an executor name");
        else
          e.executor_params.values[k] =
              read_as<std::string>(kv.second, file, "executor." + k, "a scalar parameter");
      }
    } else {
      e.executor = read_as<std::string>(n, file, "executor", "an executor name");
    }
    live::executor_registry().get(e.executor, where(file, n, "executor"));
    live::check_executor(e.executor, e.executor_params);
  }

  if (root["policy"] && root["policies"])
    throw InputError(where(file, root["policies"], "policies") +
                     ": give either policy or policies, not both");
  if (auto n = root["policy"]) e.policies.push_back(parse_policy(n, file, "policy"));
  if (auto n = root["policies"]) {
    if (!n.IsSequence() || n.size() == 0)
      throw InputError(where(file, n, "policies") + ": expected a non-empty list of policies");
    for (size_t i = 0; i < n.size(); ++i)
      e.policies.push_back(parse_policy(n[i], file, "policies[" + std::to_string(i) + "]"));
  }
  if (e.policies.empty())
    throw InputError(file +
                     ": policy: missing; valid: " + policy::policy_registry().names_joined());

  if (auto sw = root["sweep"]) parse_sweep(sw, file, e);
  if (auto pl = root["plot"]) parse_plot(pl, file, e);

  if (auto m = root["metrics"]) {
    check_keys(m, file, "metrics", {"timeseries_interval_s"});
    if (auto n = m["timeseries_interval_s"]) {
      e.engine.timeseries_interval_s =
          read_as<double>(n, file, "metrics.timeseries_interval_s", "seconds");
      if (!(e.engine.timeseries_interval_s > 0))
        throw InputError(where(file, n, "metrics.timeseries_interval_s") + ": must be > 0");
    }
  }
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

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_spec_yaml(path);
  for (const auto& o : overrides) apply_override(root, o);
  auto e = parse_experiment(root, path, spec_base_dir(path));
  for (const auto& kv : root) {
    auto k = kv.first.as<std::string>();
    if (k == "sweep" || k == "plot") {
      std::string msg = where(path, kv.first, k);
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
  r["trace"] = t;
  r["arrival"]["process"] = arrival.process;
  r["arrival"]["rate"] = num(arrival.rate);
  r["profile"] = profile;
  auto& c = engine;
  r["engine"]["scheduler"] = c.scheduler;
  r["engine"]["max_num_seqs"] = c.max_num_seqs;
  r["engine"]["max_num_batched_tokens"] = c.max_num_batched_tokens;
  r["engine"]["gpu_memory_utilization"] = num(c.gpu_memory_utilization);
  r["engine"]["activation_reserve_gib"] = num(c.activation_reserve_gib);
  r["engine"]["swap_space_gib"] = num(c.swap_space_gib);
  r["engine"]["gpu_blocks"] = c.gpu_blocks;
  r["engine"]["cpu_blocks"] = c.cpu_blocks;
  r["engine"]["prefix_caching"] = c.prefix_caching;
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
  r["metrics"]["timeseries_interval_s"] = num(c.timeseries_interval_s);
  for (const auto& ax : sweep)
    for (const auto& v : ax.values) r["sweep"][ax.key].push_back(v);
  if (has_validate) {
    r["validate"]["model"] = validate.model;
    r["validate"]["quick"] = validate.quick;
  }
  if (has_plot) {
    YAML::Node pl(YAML::NodeType::Map);
    if (plot.latency_target_s > 0) pl["latency_target_s"] = num(plot.latency_target_s);
    r["plot"] = pl;
  }
  return r;
}

}  // namespace isim::exp
