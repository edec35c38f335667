// isim validate --against vllm: the replay of a real vLLM run, the per-metric comparison, and
// its outputs (against.csv, against.json, against_requests.csv, against.png).
#include "experiments/validate_vllm.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/outputs.h"
#include "experiments/run.h"
#include "experiments/plot_context.h"
#include "experiments/run_script.h"
#include "experiments/sweep.h"
#include "sim/scheduler.h"
#include "traces/atomic_file.h"
#include "traces/input_error.h"
#include "traces/jsonl.h"

namespace isim::exp {

namespace fs = std::filesystem;

std::vector<Latency> real_latencies(const std::vector<trace::VllmRequest>& requests) {
  std::vector<Latency> out;
  for (const auto& r : requests) {
    Latency l;
    l.id = r.id;
    l.start_s = r.queued_s;
    l.finish_s = r.last_token_s;
    l.ttft_s = r.first_token_s - r.queued_s;
    if (r.output > 1)
      l.tpot_s = (r.last_token_s - r.first_token_s) / static_cast<double>(r.output - 1);
    l.e2e_s = r.last_token_s - r.queued_s;
    l.output = r.output;
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<Latency> sim_latencies(const std::vector<sim::SessionRecord>& sessions) {
  std::vector<Latency> out;
  for (const auto& s : sessions) {
    if (s.status != "finished") continue;
    // The engine's TPOT is (last - first token) over (output - 1) per segment: with one
    // segment, the real side's definition.
    out.push_back({s.id, s.arrival_s, s.finish_s, s.ttft_s, s.tpot_s, s.e2e_s, s.output_tokens});
  }
  return out;
}

double AgainstMetric::error() const {
  if (real == 0) return sim == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), sim);
  return (sim - real) / real;
}

std::vector<std::pair<std::string, double>> latency_metrics(const std::vector<Latency>& l) {
  std::vector<double> ttft, tpot, e2e;
  double first = std::numeric_limits<double>::infinity();
  double last = -first;
  int64_t tokens = 0;
  for (const auto& x : l) {
    ttft.push_back(x.ttft_s);
    if (x.tpot_s >= 0) tpot.push_back(x.tpot_s);
    e2e.push_back(x.e2e_s);
    first = std::min(first, x.start_s);
    last = std::max(last, x.finish_s);
    tokens += x.output;
  }
  const sim::Stat t = sim::make_stat(ttft), p = sim::make_stat(tpot), e = sim::make_stat(e2e);
  const double makespan = l.empty() ? 0 : last - first;
  return {{"ttft_s.mean", t.mean},
          {"ttft_s.p50", t.p50},
          {"ttft_s.p90", t.p90},
          {"ttft_s.p99", t.p99},
          {"tpot_s.mean", p.mean},
          {"tpot_s.p50", p.p50},
          {"tpot_s.p99", p.p99},
          {"e2e_s.mean", e.mean},
          {"e2e_s.p50", e.p50},
          {"e2e_s.p99", e.p99},
          {"throughput_tokens_per_s", makespan > 0 ? static_cast<double>(tokens) / makespan : 0.0},
          {"makespan_s", makespan}};
}

std::vector<AgainstMetric> compare_latencies(const std::vector<Latency>& real,
                                             const std::vector<Latency>& sim) {
  const auto r = latency_metrics(real), s = latency_metrics(sim);
  std::vector<AgainstMetric> out;
  for (size_t i = 0; i < r.size(); ++i) out.push_back({r[i].first, r[i].second, s[i].second});
  return out;
}

std::string against_csv(const std::vector<AgainstMetric>& metrics) {
  std::string out = "metric,real,sim,error\n";
  for (const auto& m : metrics)
    out += fmt::format("{},{},{},{}\n", m.metric, m.real, m.sim, m.error());
  return out;
}

Experiment vllm_experiment(const VllmMeta& meta, const AgainstOptions& o,
                           const std::string& trace_path) {
  YAML::Node y;
  y["name"] = "against-vllm";
  y["trace"]["from"] = "jsonl";
  y["trace"]["path"] = trace_path;
  y["arrival"]["process"] = "replay";
  y["profile"] = o.profile;
  y["policy"] = "discard";
  YAML::Node en = y["engine"];
  en["scheduler"] = o.scheduler;
  en["max_num_seqs"] = meta.max_num_seqs;
  en["max_num_batched_tokens"] = meta.max_num_batched_tokens;
  en["gpu_memory_utilization"] = meta.gpu_memory_utilization;
  en["prefix_caching"] = meta.enable_prefix_caching;
  en["long_prefill_token_threshold"] = meta.long_prefill_token_threshold;
  en["max_num_partial_prefills"] = meta.max_num_partial_prefills;
  en["max_long_partial_prefills"] = meta.max_long_partial_prefills;
  en["async_scheduling"] = meta.async_scheduling;
  y["metrics"]["timeseries_interval_s"] = 1.0;  // vLLM's stats tick
  const std::string origin = "isim validate --against vllm";
  YamlOrigins origins;
  apply_overrides(y, origin, o.overrides, origins);
  return parse_experiment(y, origin, ".");
}

namespace {

void check_scheduler(const std::string& name) {
  if (name != kAgainstVllmScheduler || sim::scheduler_registry().contains(name)) return;
  throw InputError(fmt::format(
      "--scheduler: the default '{}' is not registered in this build; valid: {} (pass one with "
      "--scheduler, e.g. --scheduler chunked)",
      name, sim::scheduler_registry().names_joined()));
}

// The run's KV layout must be the profile's, or the block counts mean different things.
void check_profile(const VllmMeta& meta, const sim::Profile& p, const std::string& profile) {
  if (meta.block_size != p.block_tokens)
    throw InputError(
        fmt::format("{}: kv_cache.block_size: the run used {}-token blocks, but the profile {} has "
                    "kv.block_tokens {}",
                    meta.path, meta.block_size, profile, p.block_tokens));
  if (meta.tensor_parallel_size != p.model.tp)
    throw InputError(fmt::format(
        "{}: engine_kwargs.tensor_parallel_size: the run used tp {}, but the profile {} has "
        "model.tp {}",
        meta.path, meta.tensor_parallel_size, profile, p.model.tp));
}

std::string percent(double e) {
  if (std::isinf(e)) return e > 0 ? "+inf" : "-inf";
  return fmt::format("{:+.1f}%", 100.0 * e);
}

std::string table(const std::vector<AgainstMetric>& metrics) {
  std::string out = fmt::format("  {:<26} {:>12} {:>12} {:>9}\n", "metric", "real", "sim", "error");
  for (const auto& m : metrics)
    out += fmt::format("  {:<26} {:>12.6g} {:>12.6g} {:>9}\n", m.metric, m.real, m.sim,
                       percent(m.error()));
  return out;
}

// One row per real request: its latencies beside the simulated ones ("" when it did not finish).
std::string requests_csv(const std::vector<Latency>& real, const std::vector<Latency>& sim) {
  std::map<std::string, const Latency*> by_id;
  for (const auto& s : sim) by_id[s.id] = &s;
  auto opt = [](double v) { return v >= 0 ? fmt::format("{}", v) : std::string(); };
  std::string out =
      "id,output_tokens,real_ttft_s,sim_ttft_s,real_tpot_s,sim_tpot_s,real_e2e_s,sim_e2e_s\n";
  for (const auto& r : real) {
    auto it = by_id.find(r.id);
    const Latency* s = it == by_id.end() ? nullptr : it->second;
    out +=
        fmt::format("{},{},{},{},{},{},{},{}\n", r.id, r.output, r.ttft_s, s ? opt(s->ttft_s) : "",
                    opt(r.tpot_s), s ? opt(s->tpot_s) : "", r.e2e_s, s ? opt(s->e2e_s) : "");
  }
  return out;
}

struct Report {
  const VllmRun& run;
  const Experiment& e;
  const cluster::RunResult& result;
  const RunTrace& trace;
  std::vector<AgainstMetric> metrics;
};

nlohmann::ordered_json against_json(const Report& r, const AgainstOptions& o) {
  nlohmann::ordered_json j;
  j["against"] = "vllm";
  j["run_dir"] = o.run_dir;
  j["vllm_version"] = r.run.meta.vllm_version;
  j["model"] = r.run.meta.model;
  j["device"] = r.run.meta.device_name;
  j["profile"] = r.e.profile;
  j["scheduler"] = r.e.engine.scheduler;
  j["policy"] = "discard";
  j["requests"] = r.run.requests.size();
  j["sim_finished"] = r.result.summary.finished;
  j["prefix_hashes"] = r.trace.prefix_hashes;
  j["note"] = r.trace.note;
  auto& kv = j["kv_cache"];
  kv["block_tokens"] = r.run.meta.block_size;
  if (r.run.meta.num_gpu_blocks) kv["real_gpu_blocks"] = *r.run.meta.num_gpu_blocks;
  kv["sim_gpu_blocks"] = r.result.summary.gpu_blocks;
  kv["sim_gpu_blocks_from"] = r.e.engine.gpu_blocks > 0 ? "engine.gpu_blocks" : "derived";
  if (!r.result.replicas.empty()) kv["sim_gpu_rule"] = r.result.replicas.front().blocks.gpu_rule;
  auto& m = j["metrics"];
  m = nlohmann::ordered_json::array();
  for (const auto& x : r.metrics) {
    nlohmann::ordered_json row;
    row["metric"] = x.metric;
    row["real"] = x.real;
    row["sim"] = x.sim;
    if (std::isfinite(x.error())) row["error"] = x.error();  // JSON has no infinity
    m.push_back(std::move(row));
  }
  return j;
}

std::string plot_script() {
  if (const char* p = std::getenv("ISIM_PLOT_AGAINST_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_AGAINST_SCRIPT_DEFAULT;
}

// against.png; a note (never a failure) without matplotlib.
void plot(const std::string& out, const VllmRun& run) {
  const fs::path dir(out);
  std::string tried;
  const std::string py = find_plot_python(&tried);
  if (py.empty()) {
    fmt::print("note: no python3 with matplotlib ({}): {} not drawn\n", tried,
               (dir / "against.png").string());
    return;
  }
  PlotContext ctx;  // the title: the real run's GPU, model and requests, at their own times
  ctx.gpu = {run.meta.device_name};
  ctx.model = {run.meta.model};
  ctx.workload = {"vLLM run " + fs::path(run.dir).filename().string()};
  ctx.rate = {"the run's own arrival times"};
  write_plot_context(out, ctx);
  const std::string real_ts =
      run.has_timeseries ? (fs::path(run.dir) / "timeseries.csv").string() : "-";
  const std::string png = (dir / "against.png").string(), tmp = png + ".tmp.png";
  const int rc = run_script({py, plot_script(), (dir / "against_requests.csv").string(),
                             (dir / "timeseries.csv").string(), real_ts, tmp},
                            true, false);
  std::error_code ec;
  if (rc == 0) fs::rename(tmp, png, ec);
  if (rc != 0 || ec)
    fmt::print("warning: {} failed (exit {}): {} not drawn\n", plot_script(), rc, png);
  else
    fmt::print("plot: {}\n", png);
}

void print_header(const Report& r, const AgainstOptions& o) {
  const auto& m = r.run.meta;
  fmt::print("vLLM {} run {}: {} requests, {} on {}\n", m.vllm_version, o.run_dir,
             r.run.requests.size(), m.model, m.device_name);
  fmt::print(
      "simulated: profile {}, scheduler {}, policy discard, max_num_seqs {}, "
      "max_num_batched_tokens {}, prefix caching {}\n",
      r.e.profile, r.e.engine.scheduler, r.e.engine.max_num_seqs, r.e.engine.max_num_batched_tokens,
      r.e.engine.prefix_caching ? "on" : "off");
  fmt::print("note: {}\n", r.trace.note);
  const std::string real =
      m.num_gpu_blocks ? fmt::format("{}", *m.num_gpu_blocks) : std::string("(not reported)");
  fmt::print("KV cache: vLLM sized {} GPU blocks of {} tokens; the simulator {} {}\n", real,
             m.block_size, r.e.engine.gpu_blocks > 0 ? "was given" : "derived",
             r.result.summary.gpu_blocks);
  if (!r.result.replicas.empty())
    fmt::print("  ({})\n", r.result.replicas.front().blocks.gpu_rule);
  if (r.result.summary.finished < static_cast<int64_t>(r.run.requests.size()))
    fmt::print("warning: the simulation finished {} of {} requests; sim metrics cover those\n",
               r.result.summary.finished, r.run.requests.size());
}

}  // namespace

int run_against_vllm(const AgainstOptions& o) {
  check_scheduler(o.scheduler);
  const VllmRun run = load_vllm_run(o.run_dir);
  const RunTrace rt = vllm_run_trace(run);
  fs::create_directories(o.out);
  const std::string trace_path = (fs::path(o.out) / "trace.jsonl").string();
  std::ostringstream os;
  trace::write_jsonl(os, rt.trace);
  write_file_atomic(trace_path, os.str());

  const Experiment e = vllm_experiment(run.meta, o, trace_path);
  const Inputs in = prepare(e);
  check_profile(run.meta, in.profile, e.profile);
  const PolicySpec& p = e.policies.front();
  const cluster::RunResult result = run_policy(e, in, p);
  write_run(o.out, e, in, p, result);

  const auto real = real_latencies(run.requests);
  const auto sim = sim_latencies(result.sessions);
  Report r{run, e, result, rt, compare_latencies(real, sim)};
  if (run.meta.num_gpu_blocks)
    r.metrics.push_back({"gpu_blocks", static_cast<double>(*run.meta.num_gpu_blocks),
                         static_cast<double>(result.summary.gpu_blocks)});
  const fs::path dir(o.out);
  write_file_atomic((dir / "against.csv").string(), against_csv(r.metrics));
  write_file_atomic((dir / "against.json").string(), against_json(r, o).dump(2) + "\n");
  write_file_atomic((dir / "against_requests.csv").string(), requests_csv(real, sim));

  print_header(r, o);
  fmt::print("{}", table(r.metrics));
  fmt::print(
      "wrote {}, {}, {} and the simulated run's sessions.csv, summary.json, "
      "timeseries.csv\n",
      (dir / "against.csv").string(), (dir / "against.json").string(),
      (dir / "against_requests.csv").string());
  plot(o.out, run);
  return 0;
}

}  // namespace isim::exp
