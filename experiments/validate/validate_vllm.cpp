// isim validate --against vllm: the replay of a real vLLM run, the per-metric comparison, and
// its outputs (against.csv, against.json, against_requests.csv, against.png).
#include "experiments/validate/validate_vllm.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/plots/plot_context.h"
#include "experiments/run/outputs.h"
#include "experiments/run/run.h"
#include "experiments/run/run_script.h"
#include "experiments/sweep/sweep.h"
#include "experiments/validate/validate_vllm_layout.h"
#include "experiments/validate/validate_vllm_report.h"
#include "experiments/validate/vllm_defaults.h"
#include "sim/scheduler.h"
#include "traces/jsonl.h"

namespace isim::exp {

namespace fs = std::filesystem;

std::string against_requests_csv(const std::vector<Latency>& real,
                                 const std::vector<Latency>& sim) {
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

Experiment vllm_experiment(const VllmMeta& meta, const AgainstOptions& o,
                           const std::string& trace_path, const VllmLayout& layout) {
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
  add_vllm_cluster(y, layout);
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

// Every refusal that reading the inputs can give, before OUT is made: the trace is prepared
// from a copy in the temporary folder (removed after; its path, in a message, reads as the
// TRACE_PATH to come) and the profiles checked against the run and its layout.
void refuse_before_output(const VllmRun& run, const AgainstOptions& o, const std::string& jsonl,
                          const std::string& trace_path) {
  const fs::path tmp = fs::temp_directory_path() / fmt::format("isim-against-{}.jsonl", getpid());
  struct Removed {
    fs::path p;
    ~Removed() { remove_file(p.string()); }
  } removed{tmp};
  try {
    write_file_atomic(tmp.string(), jsonl);
    Experiment e = vllm_experiment(run.meta, o, tmp.string());
    const Inputs in = prepare(e);
    VllmMeta probe = run.meta;  // a copy: the check records its assumptions once, later
    const VllmLayout layout = check_vllm_profile(probe, in.profile, e.profile);
    if (layout.cluster())
      (void)load_group_profiles(vllm_experiment(probe, o, tmp.string(), layout), in.profile);
  } catch (const InputError& ie) {
    std::string m = ie.what();
    for (size_t at; (at = m.find(tmp.string())) != std::string::npos;)
      m.replace(at, tmp.string().size(), trace_path);
    throw InputError(m);
  }
}

std::string plot_script() {
  if (const char* p = std::getenv("ISIM_PLOT_AGAINST_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_AGAINST_SCRIPT_DEFAULT;
}

// against.png; a note (never a failure) without matplotlib.
// `out`: one replay's folder; `blocks` says at which block count it ran.
void plot(const std::string& out, const VllmRun& run, const std::string& blocks) {
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
  ctx.workload = {"vLLM run " + fs::path(run.dir).filename().string() + ", sim at " + blocks};
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

struct Replayed {
  AgainstReplay report;
  Experiment e;
  cluster::RunResult result;
};

// One replay into `dir`: the simulated run's outputs, against.csv and against_requests.csv.
Replayed replay(const Experiment& e, const Inputs& in, const VllmRun& run, const std::string& from,
                const std::string& dir, const std::string& rel) {
  const PolicySpec& p = e.policies.front();
  Replayed r{{}, e, run_policy(e, in, p)};
  write_run(dir, e, in, p, r.result);
  const auto real = real_latencies(run.requests);
  const auto sim = sim_latencies(r.result.sessions);
  r.report = {from, r.result.summary.gpu_blocks, rel, compare_latencies(real, sim)};
  std::vector<AgainstMetric> rows = r.report.metrics;
  if (run.meta.num_gpu_blocks)
    rows.push_back({"gpu_blocks", static_cast<double>(*run.meta.num_gpu_blocks),
                    static_cast<double>(r.report.gpu_blocks)});
  write_file_atomic((fs::path(dir) / "against.csv").string(), against_csv(rows));
  write_file_atomic((fs::path(dir) / "against_requests.csv").string(),
                    against_requests_csv(real, sim));
  return r;
}

nlohmann::ordered_json metrics_json(const std::vector<AgainstMetric>& metrics) {
  auto m = nlohmann::ordered_json::array();
  for (const auto& x : metrics) {
    nlohmann::ordered_json row;
    row["metric"] = x.metric;
    row["real"] = x.real;
    row["sim"] = x.sim;
    if (std::isfinite(x.error())) row["error"] = x.error();  // JSON has no infinity
    m.push_back(std::move(row));
  }
  return m;
}

struct Report {
  const VllmRun& run;
  const RunTrace& trace;
  const AgainstOptions& o;
  const VllmLayout& layout;
  std::vector<Replayed> replays;
  std::vector<AgainstReplay> reports() const {
    std::vector<AgainstReplay> out;
    for (const auto& r : replays) out.push_back(r.report);
    return out;
  }
  bool predicted() const { return replays.front().report.blocks_from == "predicted"; }
};

nlohmann::ordered_json against_json(const Report& r) {
  const VllmMeta& meta = r.run.meta;
  const Replayed& first = r.replays.front();
  nlohmann::ordered_json j;
  j["against"] = "vllm";
  j["run_dir"] = r.o.run_dir;
  if (meta.vllm_version.empty())
    j["vllm_version"] = nullptr;
  else
    j["vllm_version"] = meta.vllm_version;
  j["model"] = meta.model;
  j["device"] = meta.device_name;
  j["older_schema"] = meta.older_schema;
  j["assumptions"] = meta.assumptions;
  j["profile"] = first.e.profile;
  j["scheduler"] = first.e.engine.scheduler;
  j["policy"] = "discard";
  j["requests"] = r.run.requests.size();
  j["sim_finished"] = first.result.summary.finished;
  j["prefix_hashes"] = r.trace.prefix_hashes;
  j["note"] = r.trace.note;
  auto& kv = j["kv_cache"];
  kv["block_tokens"] = meta.block_size;
  if (meta.num_gpu_blocks) kv["real_gpu_blocks"] = *meta.num_gpu_blocks;
  kv["sim_gpu_blocks"] = first.result.summary.gpu_blocks;
  kv["sim_gpu_blocks_from"] = r.predicted() ? "derived" : "engine.gpu_blocks";
  if (!first.result.replicas.empty())
    kv["sim_gpu_rule"] = first.result.replicas.front().blocks.gpu_rule;
  // The first replay's metrics, then gpu_blocks (vLLM's against the first replay's).
  std::vector<AgainstMetric> rows = first.report.metrics;
  if (meta.num_gpu_blocks)
    rows.push_back({"gpu_blocks", static_cast<double>(*meta.num_gpu_blocks),
                    static_cast<double>(first.report.gpu_blocks)});
  j["metrics"] = metrics_json(rows);
  auto& reps = j["replays"];
  reps = nlohmann::ordered_json::array();
  for (const auto& x : r.replays) {
    nlohmann::ordered_json one;
    one["gpu_blocks_from"] = x.report.blocks_from;
    one["gpu_blocks"] = x.report.gpu_blocks;
    one["dir"] = x.report.dir;
    one["sim_finished"] = x.result.summary.finished;
    one["error_kind"] =
        at_vllm_blocks(x.report, meta.num_gpu_blocks) ? "latency" : "latency and capacity";
    one["metrics"] = metrics_json(x.report.metrics);
    reps.push_back(std::move(one));
  }
  if (meta.num_gpu_blocks && r.predicted()) {
    auto& c = j["capacity"];
    c["predicted_gpu_blocks"] = first.report.gpu_blocks;
    c["vllm_gpu_blocks"] = *meta.num_gpu_blocks;
    c["error"] = capacity_error(first.report.gpu_blocks, *meta.num_gpu_blocks);
  }
  if (r.layout.cluster()) j["layout"] = vllm_layout_json(r.layout, first.result);
  j["summary"] = against_summary(r.reports(), meta.num_gpu_blocks);
  return j;
}

void print_header(const Report& r) {
  const auto& m = r.run.meta;
  const Experiment& e = r.replays.front().e;
  const cluster::RunResult& first = r.replays.front().result;
  std::string schema;
  if (m.older_schema)
    schema = " (the older meta.json schema: no kv_cache, hardware, resolved_config)";
  else
    for (const auto& section : m.missing_sections)
      schema += (schema.empty() ? " (meta.json has no " : ", ") + section;
  if (!m.older_schema && !schema.empty()) schema += ")";
  fmt::print("vLLM {} run {}: {} requests, {} on {}{}\n",
             m.vllm_version.empty() ? "(version not stated)" : m.vllm_version, r.o.run_dir,
             r.run.requests.size(), m.model, m.device_name, schema);
  for (const auto& a : m.assumptions) fmt::print("assumed: {}\n", a);
  fmt::print(
      "simulated: profile {}, scheduler {}, policy discard, max_num_seqs {}, "
      "max_num_batched_tokens {}, prefix caching {}\n",
      e.profile, e.engine.scheduler, e.engine.max_num_seqs, e.engine.max_num_batched_tokens,
      e.engine.prefix_caching ? "on" : "off");
  if (r.layout.cluster()) {
    fmt::print("layout: {} (each core with the settings above and its own KV cache)\n",
               r.layout.line());
    const cluster::LockstepStats& s = first.lockstep;
    if (r.layout.lockstep())
      fmt::print(
          "lockstep: {} group steps, {} of {} core-steps ran vLLM's dummy batch; cores waited "
          "{:.6g} s for the slowest; MoE layers {:.6g} s, of which {:.6g} s exposed "
          "communication\n",
          s.steps, s.dummy_core_steps, s.core_steps, s.wait_s, s.moe_s, s.exposed_comm_s);
  }
  fmt::print("note: {}\n", r.trace.note);
  const std::string real =
      m.num_gpu_blocks ? fmt::format("{}", *m.num_gpu_blocks) : std::string("(not reported)");
  fmt::print("KV cache: vLLM sized {} GPU blocks of {} tokens; the simulator {} {}\n", real,
             m.block_size, r.predicted() ? "derived" : "was given", first.summary.gpu_blocks);
  if (!first.replicas.empty()) fmt::print("  ({})\n", first.replicas.front().blocks.gpu_rule);
  if (r.layout.dp > 1)
    fmt::print(
        "  (both summed over the {} engine cores, as vLLM's front end sums its cores' counts: "
        "the simulator's {} a core)\n",
        r.layout.dp, first.replicas.front().blocks.gpu);
  if (r.replays.size() > 1)
    fmt::print("replayed twice: at the simulator's {} blocks (in {}) and at vLLM's {} (in {})\n",
               first.summary.gpu_blocks, r.o.out, *m.num_gpu_blocks,
               (fs::path(r.o.out) / r.replays.back().report.dir).string());
  for (const auto& x : r.replays)
    if (x.result.summary.finished < static_cast<int64_t>(r.run.requests.size()))
      fmt::print(
          "warning: at {} blocks the simulation finished {} of {} requests; sim metrics "
          "cover those\n",
          x.report.gpu_blocks, x.result.summary.finished, r.run.requests.size());
}

}  // namespace

int run_against_vllm(const AgainstOptions& o) {
  check_scheduler(o.scheduler);
  const VllmUsageContext context = parse_usage_context(o.usage_context, "--usage-context");
  VllmRun run = load_vllm_run(o.run_dir);
  if (run.meta.device_name.empty() || !run.meta.unstated.empty())
    apply_vllm_defaults(run.meta, sim::load_profile(o.profile), context);
  const RunTrace rt = vllm_run_trace(run);
  const std::string trace_path = (fs::path(o.out) / "trace.jsonl").string();
  Experiment e = vllm_experiment(run.meta, o, trace_path);
  std::ostringstream os;
  trace::write_jsonl(os, rt.trace);
  check_out_dir(o.out, "--out");
  refuse_before_output(run, o, os.str(), trace_path);  // then the folder and trace.jsonl
  make_out_dir(o.out, "--out");
  write_file_atomic(trace_path, os.str());

  Inputs in = prepare(e);
  const VllmLayout layout = check_vllm_profile(run.meta, in.profile, e.profile);
  if (layout.cluster()) {  // the same trace and profile, the cores of a cluster group
    e = vllm_experiment(run.meta, o, trace_path, layout);
    in.group_profiles = load_group_profiles(e, in.profile);
    note_vllm_layout(run.meta, layout, e);
  }
  Report r{run, rt, o, layout, {}};
  r.replays.push_back(
      replay(e, in, run, e.engine.gpu_blocks > 0 ? "given" : "predicted", o.out, "."));
  // The latency error needs the replay at vLLM's own count; the first replay is at it only
  // when the rule (or the user) gave that count.
  const std::optional<int64_t> vllm_blocks = run.meta.num_gpu_blocks;
  if (vllm_blocks && *vllm_blocks != r.replays.front().report.gpu_blocks) {
    AgainstOptions at = o;
    // vLLM's count is its cores' sum: each core gets its share (a block at least).
    const int64_t per_core = std::max<int64_t>(1, *vllm_blocks / layout.dp);
    at.overrides.push_back(fmt::format("engine.gpu_blocks={}", per_core));
    if (per_core * layout.dp != *vllm_blocks)
      run.meta.assumptions.push_back(fmt::format(
          "kv_cache.num_gpu_blocks: vLLM's {} GPU blocks over {} engine cores: the replay at "
          "vLLM's count gives each core {} ({} in all)",
          *vllm_blocks, layout.dp, per_core, per_core * layout.dp));
    const std::string rel = "at-vllm-blocks";
    r.replays.push_back(replay(vllm_experiment(run.meta, at, trace_path, layout), in, run, "vllm",
                               (fs::path(o.out) / rel).string(), rel));
  }
  const fs::path dir(o.out);
  write_file_atomic((dir / "against.json").string(), against_json(r).dump(2) + "\n");

  print_header(r);
  fmt::print("{}", against_table(r.reports()));
  if (vllm_blocks && r.predicted())
    fmt::print("{}\n", capacity_line(r.replays.front().report.gpu_blocks, *vllm_blocks));
  else if (!vllm_blocks)
    fmt::print(
        "capacity error: none ({}: no vLLM block count to compare with; one replay, at "
        "the {} count)\n",
        run.meta.no_gpu_blocks, r.predicted() ? "predicted" : "given");
  fmt::print("summary: {}\n", against_summary(r.reports(), vllm_blocks));
  fmt::print(
      "wrote {}, {}, {} and the simulated run's sessions.csv, summary.json, timeseries.csv{}\n",
      (dir / "against.json").string(), (dir / "against.csv").string(),
      (dir / "against_requests.csv").string(),
      r.replays.size() > 1 ? fmt::format("; the same for the replay at vLLM's blocks in {}",
                                         (dir / r.replays.back().report.dir).string())
                           : std::string());
  for (const auto& x : r.replays)
    plot((dir / x.report.dir).lexically_normal().string(), run,
         fmt::format("{} {} GPU blocks",
                     x.report.blocks_from == "vllm" ? "vLLM's" : "the " + x.report.blocks_from,
                     grouped(x.report.gpu_blocks)));
  return 0;
}

}  // namespace isim::exp
