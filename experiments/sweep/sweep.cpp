#include "experiments/sweep/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "core/parallel.h"
#include "core/strict_yaml.h"
#include "experiments/run/outputs.h"
#include "experiments/run/run.h"
#include "experiments/spec/sweep_variants.h"
#include "experiments/sweep/sweep_inputs.h"
#include "experiments/sweep/sweep_shards.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

// The YAML a run is parsed from: the spec without its sweep, plot and policy list, with one
// policy and the run's overrides applied in order.
YAML::Node run_yaml(const YAML::Node& base, const YAML::Node& policy, const Overrides& overrides) {
  YAML::Node y = YAML::Clone(base);
  y["policy"] = YAML::Clone(policy);
  for (const auto& [k, v] : overrides) apply_override(y, kv_text(k, v));
  return y;
}

void flatten(const nlohmann::ordered_json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& [k, v] : j.items()) {
    std::string name = prefix;
    if (!name.empty()) name += '.';
    name += k;
    if (v.is_object()) {
      flatten(v, name, out);
    } else if (v.is_number_float()) {
      out.emplace_back(name, fmt::format("{}", v.get<double>()));
    } else if (v.is_number_unsigned()) {
      out.emplace_back(name, fmt::format("{}", v.get<uint64_t>()));
    } else if (v.is_number_integer()) {
      out.emplace_back(name, fmt::format("{}", v.get<int64_t>()));
    } else if (v.is_string()) {
      out.emplace_back(name, v.get<std::string>());
    } else if (v.is_boolean()) {
      out.emplace_back(name, v.get<bool>() ? "1" : "0");
    } else if (v.is_null()) {
      out.emplace_back(name, "");  // not applicable: an empty cell
    } else {
      out.emplace_back(name, v.dump());
    }
  }
}

// summary.json flattened, without its "policy" (results.csv has its own policy column); with
// `cluster:`, the fleet totals too (not each replica's).
std::vector<std::pair<std::string, std::string>> metric_fields(const cluster::RunResult& r,
                                                               bool fleet) {
  std::vector<std::pair<std::string, std::string>> out;
  auto j = summary_json(r.summary, "");
  if (fleet) add_fleet_json(j, r, /*per_replica=*/false);
  j.erase("policy");
  j.erase("slo");      // the limits are the spec's (or a swept column); goodput.* are the results
  j.erase("windows");  // arrays: each run folder's windows.csv has them
  j.erase("recovery_s");  // recovery_max_s stays
  flatten(j, "", out);
  return out;
}

// InputError unless policies x each key's values is at most kMaxSweepRuns (counted without
// overflow, before anything is expanded).
void check_sweep_size(const std::vector<SweepAxis>& axes, size_t policies,
                      const std::string& file) {
  size_t runs = policies;
  std::string terms = fmt::format("{} {}", policies, policies == 1 ? "policy" : "policies");
  const SweepAxis* widest = nullptr;
  for (const auto& ax : axes) {
    const size_t n = ax.values.size();
    runs = runs > kMaxSweepRuns / n ? kMaxSweepRuns + 1 : runs * n;
    terms += fmt::format(" x {} {}", n, ax.key);
    if (!widest || n > widest->values.size()) widest = &ax;
  }
  if (runs <= kMaxSweepRuns) return;
  throw InputError(fmt::format(
      "{}sweep: {} is more than the {} runs a sweep may have; sweep fewer values (e.g. -p "
      "'sweep.{}=[{}, {}]'), or split it into several specs",
      sweep_at(file, widest->line), terms, kMaxSweepRuns, widest->key, widest->values[0],
      widest->values.size() > 1 ? widest->values[1] : widest->values[0]));
}

// label() with the policy's parameters after its name, made unique with " #2", " #3", ...
std::string run_key(const SweepRun& r, std::map<std::string, int>& seen) {
  std::string params;
  for (const auto& [k, v] : r.policy().params.values)
    params += fmt::format("{}{}={}", params.empty() ? "{" : ",", k, v);
  if (!params.empty()) params += '}';
  std::string key = r.label();
  key.insert(std::string("policy=").size() + r.policy().name.size(), params);
  const int n = ++seen[key];
  return n == 1 ? key : fmt::format("{} #{}", key, n);
}

// plot.waste_rate must be one of the swept arrival rates: waste.png is drawn at a rate that ran.
void check_waste_rate(const PlotSpec& p, const std::vector<SweepAxis>& axes) {
  if (!p.has_waste_rate) return;
  for (const auto& ax : axes) {
    if (ax.key != "arrival.rate") continue;
    for (const auto& v : ax.values)
      if (std::strtod(v.c_str(), nullptr) == p.waste_rate) return;
    std::string list;
    for (const auto& v : ax.values) list += (list.empty() ? "" : ", ") + v;
    throw InputError(fmt::format("{}: {} is not one of the swept arrival.rate values ({})",
                                 p.waste_rate_where, p.waste_rate, list));
  }
  throw InputError(p.waste_rate_where +
                   ": needs arrival.rate in sweep: (waste.png is drawn at one swept rate)");
}

}  // namespace

std::string SweepRun::label() const {
  std::string s = "policy=";
  s += policy().name;
  if (!estimator.empty()) {
    s += " estimator=";
    s += estimator;
  }
  for (const auto& [k, v] : point) {
    s += ' ';
    s += kv_text(k, v);
  }
  return s;
}

Sweep expand_sweep(const YAML::Node& root, const std::string& file, const std::string& base_dir) {
  Sweep s;
  s.base = parse_experiment(root, file, base_dir);

  std::vector<YAML::Node> policy_nodes;
  if (auto ps = root["policies"]) {
    for (size_t i = 0; i < ps.size(); ++i) policy_nodes.push_back(ps[i]);
  } else {
    policy_nodes.push_back(root["policy"]);
  }
  YAML::Node base = YAML::Clone(root);
  for (const char* k : {"sweep", "plot", "policies", "policy"}) base.remove(k);

  const auto& axes = s.base.sweep;
  check_sweep_size(axes, policy_nodes.size(), file);
  // Each value alone first, so that an error names the one key and value at fault.
  auto parse_alone = [&](const Overrides& o) {
    parse_experiment(run_yaml(base, policy_nodes.front(), o), file, base_dir);
  };
  for (const auto& ax : axes)
    for (size_t i = 0; i < ax.values.size(); ++i) check_axis_value(ax, i, file, parse_alone);

  std::vector<size_t> pick(axes.size(), 0);
  std::map<std::string, int> seen;  // key -> how often it came so far
  for (size_t pi = 0; pi < policy_nodes.size(); ++pi) {
    const auto& params = s.base.policies[pi].params.values;
    auto est = params.find("estimator");
    std::fill(pick.begin(), pick.end(), 0);
    while (true) {
      SweepRun r;
      r.index = s.runs.size();
      r.estimator = est == params.end() ? "" : est->second;
      r.experiment.policies = {s.base.policies[pi]};  // for label() should the parse fail
      Overrides overrides;
      for (size_t a = 0; a < axes.size(); ++a) {
        r.point.emplace_back(axis_column(axes[a]), axes[a].values[pick[a]]);
        for (auto& o : axis_overrides(axes[a], pick[a])) overrides.push_back(std::move(o));
      }
      YAML::Node y = run_yaml(base, policy_nodes[pi], overrides);
      try {
        r.experiment = parse_experiment(y, file, base_dir);
      } catch (const InputError& ex) {
        std::string msg = sweep_at(file, 0);
        msg += fmt::format("sweep run {} ({}): ", r.index, r.label());
        msg += strip_origin(ex.what(), file, "");
        throw InputError(msg);
      }
      r.key = run_key(r, seen);
      r.key_hash = shard_hash(r.key);
      s.runs.push_back(std::move(r));
      // Odometer: the last key varies fastest.
      bool more = false;
      for (size_t a = axes.size(); a-- > 0;) {
        if (++pick[a] < axes[a].values.size()) {
          more = true;
          break;
        }
        pick[a] = 0;
      }
      if (!more) break;
    }
  }
  if (s.base.has_plot) {
    bool rate = false;
    for (const auto& ax : axes)
      rate = rate || ax.key == "arrival.rate" || ax.key == "trace.think_time_s";
    if (!rate)
      throw InputError(file +
                       ": plot: the plots are against arrival rate (or a multi-turn trace's think "
                       "time); add arrival.rate to sweep: (e.g. arrival.rate: [1, 2, 4])");
    check_waste_rate(s.base.plot, axes);
  }
  return s;
}

Sweep load_sweep(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_spec_yaml(path);
  YamlOrigins origins;  // until the sweep is expanded: its errors name the -p at fault
  std::vector<std::string> plain_keys;
  for (const auto& o : overrides) {
    check_override_root(root, path, o);
    auto eq = o.find('=');
    std::string key = eq == std::string::npos ? o : o.substr(0, eq);
    if (key.rfind("sweep.", 0) == 0 && key.size() > 6) {
      // Sweep keys are dotted paths themselves: `-p sweep.arrival.rate=[1,2]` sets that one list.
      YAML::Node value = parse_yaml_value(o.substr(eq + 1), "-p " + o);
      if (!root["sweep"] || !root["sweep"].IsMap()) root["sweep"] = YAML::Node(YAML::NodeType::Map);
      root["sweep"][key.substr(6)] = value;
      origins.add(value, "-p " + o);
    } else {
      apply_override(root, o, &origins);
      plain_keys.push_back(key);
    }
  }
  if (auto sw = root["sweep"]; sw && sw.IsMap())
    for (const auto& key : plain_keys)
      if (sw[key]) {
        std::string msg = "-p ";
        msg += key;
        msg += ": this key is swept (sweep.";
        msg += key;
        msg += "); override its list instead, e.g. -p 'sweep.";
        msg += key;
        msg += "=[1, 2]'";
        throw InputError(msg);
      }
  Sweep s = expand_sweep(root, path, spec_base_dir(path));
  check_plain_overrides(s.base.sweep, plain_keys);
  return s;
}

// Fleet columns when the spec has `cluster:` or sweeps one of its keys (every run then has one).
bool fleet_columns(const Sweep& s) {
  bool any = s.base.cluster.given;
  for (const auto& ax : s.base.sweep)
    for (const auto& key : axis_keys(ax)) any = any || key.rfind("cluster", 0) == 0;
  return any;
}

// Whether any run's fleet is disaggregated: then results.csv has the cluster.disagg.* columns
// (the last ones), empty in the rows of the other runs.
bool disagg_columns(const Sweep& s) {
  for (const auto& r : s.runs)
    if (r.experiment.cluster.disagg.enabled) return true;
  return false;
}

// Whether any run's KV manager uses the fleet's tiers: then results.csv has the
// cluster.kv_tiers.* columns (after the disagg ones), empty in the rows of the other runs.
bool tier_columns(const Sweep& s) {
  for (const auto& r : s.runs)
    if (uses_tiers(r.experiment)) return true;
  return false;
}

std::vector<std::string> results_header(const Sweep& s) {
  std::vector<std::string> h = {"run_index", "policy"};
  for (const auto& ax : s.base.sweep) h.push_back(axis_column(ax));
  h.push_back("estimator");
  cluster::RunResult none;
  none.disagg.enabled = fleet_columns(s) && disagg_columns(s);
  none.tiers.enabled = fleet_columns(s) && tier_columns(s);
  // metrics.shifts_s in any run: the recovery_max_s column (empty in the other runs).
  for (const auto& r : s.runs)
    if (!r.experiment.run_metrics.shifts_s.empty()) none.summary.recovery_s = {0};
  for (const auto& [k, v] : metric_fields(none, fleet_columns(s))) h.push_back(k);
  return h;
}

std::string SweepResults::csv() const {
  std::string out = join_csv(header);
  for (const auto& r : rows) out += join_csv(r);
  return out;
}

namespace {

// The record of a run that just finished: its fixed fields and metrics, and what to warn of.
RunRecord record_of(const SweepRun& run, const cluster::RunResult& r, bool fleet) {
  RunRecord rec;
  rec.index = run.index;
  rec.policy = run.policy().name;
  for (const auto& [k, v] : run.point) rec.point.push_back(v);
  // The estimator the policy actually used (its default when the spec names none).
  rec.estimator = run.estimator;
  for (const auto& [k, v] : r.policy_facts)
    if (k == "estimator") rec.estimator = v;
  rec.metrics = metric_fields(r, fleet);
  rec.skipped = !r.skipped.empty();
  if (!r.skipped.empty())
    rec.warning = fmt::format("run {} ({}): {} session(s) can never fit and were skipped, e.g. {}",
                              run.index, run.label(), r.skipped.size(), r.skipped.front());
  else if (r.summary.extrapolations > 0)
    rec.warning = fmt::format("run {} ({}): profile extrapolated beyond its grid {} times",
                              run.index, run.label(), r.summary.extrapolations);
  return rec;
}

}  // namespace

SweepResults run_sweep(const Sweep& s, const SweepOptions& o) {
  SweepResults res;
  res.header = results_header(s);
  std::vector<const SweepRun*> shard;  // this shard's runs, finished before or not
  for (const auto& r : s.runs)
    if (o.shard.contains(r)) shard.push_back(&r);
  std::vector<RunRecord> records(shard.size());
  std::vector<char> have(shard.size(), 0);
  std::vector<const SweepRun*> todo;
  std::vector<size_t> slot_of;  // todo position -> shard position
  for (size_t i = 0; i < shard.size(); ++i) {
    const auto f = o.finished ? o.finished->find(shard[i]->index) : decltype(o.finished->end()){};
    if (o.finished && f != o.finished->end()) {
      records[i] = f->second;
      have[i] = 1;  // 1: finished before
    } else {
      todo.push_back(shard[i]);
      slot_of.push_back(i);
    }
  }
  if (!o.keep_runs_dir.empty()) fs::create_directories(o.keep_runs_dir);
  InputsCache cache(todo);
  const bool fleet = fleet_columns(s);
  std::mutex mu;  // guards notes, progress, records and the in-order commit
  std::set<std::string> notes, input_warnings;
  size_t done = 0, committed = 0;  // committed: shard positions handed to on_record so far

  size_t jobs = o.jobs;
  // Live executors measure wall time: runs side by side would slow each other down.
  for (const auto* r : todo)
    if (r->experiment.executor != "sim") jobs = 1;
  run_indexed(todo.size(), jobs, [&](size_t i) {
    const SweepRun& run = *todo[i];
    const Experiment& e = run.experiment;
    auto t0 = std::chrono::steady_clock::now();
    try {
      const std::string key = inputs_key(e);
      std::shared_ptr<const Inputs> in = cache.get(key, e);
      auto r = run_policy(e, *in, run.policy(), o.checks, nullptr, nullptr, false, o.threads);
      if (!o.keep_runs_dir.empty())
        write_run((fs::path(o.keep_runs_dir) / std::to_string(run.index)).string(), e, *in,
                  run.policy(), r);
      RunRecord rec = record_of(run, r, fleet);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& n : in->notes) notes.insert(n);
      for (const auto& w : in->warnings) input_warnings.insert(w);
      in.reset();
      cache.release(key);
      records[slot_of[i]] = std::move(rec);
      have[slot_of[i]] = 2;  // 2: finished by this call
      for (; committed < shard.size() && have[committed]; ++committed)
        if (have[committed] == 2 && o.on_record) o.on_record(records[committed]);
      ++done;
      if (o.on_done) o.on_done(SweepProgress{run, done, todo.size(), secs});
    } catch (const InputError& ie) {
      throw InputError(fmt::format("sweep run {} ({}): {}", run.index, run.label(), ie.what()));
    }
  });

  for (const auto& rec : records) {
    res.rows.push_back(results_row(res.header, rec));
    res.indices.push_back(rec.index);
    if (!rec.warning.empty()) res.warnings.push_back(rec.warning);
    res.runs_with_skipped_sessions += rec.skipped ? 1 : 0;
  }
  res.notes.assign(notes.begin(), notes.end());
  res.warnings.insert(res.warnings.begin(), input_warnings.begin(), input_warnings.end());
  return res;
}

}  // namespace isim::exp
