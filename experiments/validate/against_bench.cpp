// isim validate --against aiperf | guidellm | vllm-bench: the replay of a benchmark client's
// requests and the report (against_bench.h).
#include "experiments/validate/against_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "core/rng.h"
#include "experiments/run/outputs.h"
#include "experiments/run/run.h"
#include "experiments/validate/validate_vllm.h"
#include "experiments/validate/validate_vllm_report.h"
#include "traces/jsonl.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

// Gamma(shape, 1) by Marsaglia and Tsang (shape < 1 through shape + 1 and U^(1/shape)).
double gamma_draw(Rng& rng, double shape) {
  if (shape < 1) {
    const double u = 1.0 - rng.uniform01();  // (0, 1]
    return gamma_draw(rng, shape + 1) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = rng.normal(0, 1), v0 = 1.0 + c * x;
    if (v0 <= 0) continue;
    const double v = v0 * v0 * v0, u = 1.0 - rng.uniform01();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace

std::vector<double> bench_arrivals(int64_t n, double rate, double burstiness, uint64_t seed) {
  std::vector<double> t(static_cast<size_t>(std::max<int64_t>(n, 0)), 0.0);
  if (!std::isfinite(rate) || t.empty()) return t;
  Rng rng(seed);
  const double scale = 1.0 / (rate * burstiness);
  double sum = 0;
  for (double& x : t) x = sum += scale * gamma_draw(rng, burstiness);
  // vLLM rescales the sum so that the last request goes out at n / rate exactly.
  const double factor = static_cast<double>(n) / rate / sum;
  for (double& x : t) x *= factor;
  return t;
}

int64_t peak_in_flight(const std::vector<RequestRow>& rows) {
  std::vector<std::pair<double, int>> ev;  // ends sort before sends at one instant
  for (const auto& r : rows) {
    ev.emplace_back(r.send_s, 1);
    ev.emplace_back(r.send_s + r.e2el_s, -1);
  }
  std::sort(ev.begin(), ev.end());
  int64_t now = 0, most = 0;
  for (const auto& [t, d] : ev) most = std::max(most, now += d);
  return most;
}

double rows_span_s(const std::vector<RequestRow>& rows) {
  if (rows.empty()) return 0;
  double first = rows.front().send_s, last = first;
  for (const auto& r : rows) {
    first = std::min(first, r.send_s);
    last = std::max(last, r.send_s + r.e2el_s);
  }
  return last - first;
}

BenchTrace bench_trace(const BenchRun& run, uint64_t seed) {
  BenchTrace out;
  // A row's id: its conversation's, with /turn-K for the conversation's turn K > 0.
  auto add = [&](const RequestRow& r, bool to_last) {
    const std::string& conv = run.session_ids[static_cast<size_t>(r.session)];
    std::string id = r.seg == 0 ? conv : fmt::format("{}/turn-{}", conv, r.seg);
    if (!to_last) out.segment_ids.emplace_back();
    out.segment_ids.back().push_back(id);
    return id;
  };
  if (!run.send_times) {
    const auto at = bench_arrivals(static_cast<int64_t>(run.real.size()), run.request_rate,
                                   run.burstiness, seed);
    for (size_t i = 0; i < run.real.size(); ++i) {
      const RequestRow& r = run.real[i];
      out.trace.push_back(
          {add(r, false), at[i], {{r.input_tokens, r.output_tokens, std::nullopt}}});
    }
    return out;
  }
  // Rows come in (session, seg) order from the readers' sort.
  const RequestRow* prev = nullptr;
  for (const RequestRow& r : run.real) {
    const bool same = prev && prev->session == r.session;
    const int64_t history = same ? prev->input_tokens + prev->output_tokens : 0;
    if (same && r.input_tokens >= history) {
      const double gap = std::max(0.0, r.send_s - (prev->send_s + prev->e2el_s));
      trace::Session& s = out.trace.back();
      s.segments.back().intercept = trace::Intercept{"client", gap};
      s.segments.push_back({r.input_tokens - history, r.output_tokens, std::nullopt});
      add(r, true);
    } else {
      if (same) ++out.split_turns;
      out.trace.push_back(
          {add(r, false), r.send_s, {{r.input_tokens, r.output_tokens, std::nullopt}}});
    }
    prev = &r;
  }
  return out;
}

namespace {

Experiment bench_experiment(const BenchOptions& o, const std::string& trace_path) {
  YAML::Node y;
  y["name"] = "against-" + o.kind;
  y["trace"]["from"] = "jsonl";
  y["trace"]["path"] = trace_path;
  y["arrival"]["process"] = "replay";
  y["profile"] = o.profile;
  y["policy"] = "discard";
  y["engine"]["scheduler"] = o.scheduler;
  const std::string origin = "isim validate --against " + o.kind;
  YamlOrigins origins;
  apply_overrides(y, origin, o.overrides, origins);
  return parse_experiment(y, origin, ".");
}

// C chains of start dependencies: request i >= C starts when request i - C finishes.
void chain(trace::Trace& t, int64_t c) {
  for (size_t i = static_cast<size_t>(c); i < t.size(); ++i)
    t[i].start_after = {static_cast<int32_t>(i - static_cast<size_t>(c)), true, 0.0, {}};
}

// Prepares the replay of `jsonl` written at `path`; a refusal that names a temporary copy names
// `shown` instead.
Inputs prepare_at(const Experiment& e, const std::string& path, const std::string& shown) {
  try {
    return prepare(e);
  } catch (const InputError& ie) {
    std::string m = ie.what();
    for (size_t at; (at = m.find(path)) != std::string::npos;) m.replace(at, path.size(), shown);
    throw InputError(m);
  }
}

Latency latency_of(const RequestRow& r, std::string id) {
  return {std::move(id), r.send_s, r.send_s + r.e2el_s, r.ttft_s,
          r.tpot_s,      r.e2el_s, r.output_tokens};
}

// against_requests.csv: each real row beside the simulated turn that replayed it.
std::string requests_table(const BenchTrace& bt, const std::vector<RequestRow>& real,
                           const std::vector<RequestRow>& sim) {
  std::vector<Latency> r, s;
  size_t k = 0;  // real rows fill segment_ids in order
  for (const auto& ids : bt.segment_ids)
    for (const auto& id : ids) r.push_back(latency_of(real[k++], id));
  for (const auto& x : sim)
    s.push_back(
        latency_of(x, bt.segment_ids[static_cast<size_t>(x.session)][static_cast<size_t>(x.seg)]));
  return against_requests_csv(r, s);
}

nlohmann::ordered_json metric_rows(const std::vector<AgainstMetric>& metrics) {
  auto m = nlohmann::ordered_json::array();
  for (const auto& x : metrics) {
    nlohmann::ordered_json row;
    row["metric"] = x.metric;
    row["real"] = std::isfinite(x.real) ? nlohmann::ordered_json(x.real) : nullptr;
    row["sim"] = std::isfinite(x.sim) ? nlohmann::ordered_json(x.sim) : nullptr;
    if (std::isfinite(x.error())) row["error"] = x.error();
    m.push_back(std::move(row));
  }
  return m;
}

std::string summary_line(const BenchRun& run, const std::vector<AgainstMetric>& metrics) {
  std::string out;
  for (const auto& name : run.headline)
    for (const auto& m : metrics)
      if (m.metric == name) {
        const double e = m.error();
        out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name,
                           std::isfinite(e) ? fmt::format("{:+.1f}%", 100 * e) : "n/a");
      }
  return out;
}

}  // namespace

int run_against_bench(const BenchRun& run, const BenchOptions& o) {
  if (run.real.empty())
    throw InputError(
        fmt::format("{}: no successful request to compare ({} failed)", run.source, run.excluded));
  BenchTrace bt = bench_trace(run, o.seed);
  std::ostringstream os;
  trace::write_jsonl(os, bt.trace);
  const std::string trace_path = (fs::path(o.out) / "trace.jsonl").string();
  check_out_dir(o.out, "--out");
  {  // every refusal before OUT is made: the replay prepared from a temporary copy
    const fs::path tmp =
        fs::temp_directory_path() / fmt::format("isim-against-{}-{}.jsonl", o.kind, getpid());
    struct Removed {
      fs::path p;
      ~Removed() { remove_file(p.string()); }
    } removed{tmp};
    write_file_atomic(tmp.string(), os.str());
    const Experiment probe = bench_experiment(o, tmp.string());
    check_kv_capacity(probe, prepare_at(probe, tmp.string(), trace_path));
  }
  make_out_dir(o.out, "--out");
  write_file_atomic(trace_path, os.str());
  const Experiment e = bench_experiment(o, trace_path);
  Inputs in = prepare(e);
  const bool chained =
      !run.send_times && run.max_concurrency > 0 && !std::isfinite(run.request_rate);
  if (chained) chain(in.trace, run.max_concurrency);

  const PolicySpec& p = e.policies.front();
  const cluster::RunResult result = run_policy(e, in, p, false, nullptr, nullptr, true);
  write_run(o.out, e, in, p, result);
  const std::vector<RequestRow> sim = request_rows(result.turns, result.gaps);
  const MetricList real_m = run.metrics(run.real, run.duration_s);
  double sim_last = 0;
  for (const auto& r : sim) sim_last = std::max(sim_last, r.send_s + r.e2el_s);
  const MetricList sim_m = run.metrics(sim, run.duration_from_start ? sim_last : rows_span_s(sim));
  std::vector<AgainstMetric> metrics;
  for (size_t i = 0; i < real_m.size(); ++i)
    metrics.push_back({real_m[i].first, real_m[i].second, sim_m[i].second});

  std::vector<std::string> notes = run.notes;
  if (bt.split_turns > 0)
    notes.push_back(fmt::format(
        "{} later turns do not resend the previous turn's prompt and output: each replayed as a "
        "request of its own at its send time",
        bt.split_turns));
  if (chained)
    notes.push_back(fmt::format(
        "max_concurrency {} with an infinite rate: request i starts when request i - {} "
        "finishes ({} in flight at most, as the real run)",
        run.max_concurrency, run.max_concurrency, run.max_concurrency));
  if (!run.send_times && run.max_concurrency > 0 && !chained &&
      peak_in_flight(sim) > run.max_concurrency)
    notes.push_back(fmt::format(
        "warning: the replay had up to {} requests in flight, above the run's max_concurrency "
        "{} (not enforced at a finite rate): its queueing differs from the real run's",
        peak_in_flight(sim), run.max_concurrency));
  const auto turns = static_cast<int64_t>(run.real.size());
  if (static_cast<int64_t>(sim.size()) < turns)
    notes.push_back(
        fmt::format("warning: the simulation completed {} of {} requests; sim metrics "
                    "cover those",
                    sim.size(), turns));
  const std::string summary = summary_line(run, metrics);

  nlohmann::ordered_json j;
  j["against"] = run.kind;
  j["source"] = run.source;
  j["profile"] = o.profile;
  j["scheduler"] = e.engine.scheduler;
  j["policy"] = p.name;
  j["requests"] = turns;
  j["excluded"] = run.excluded;
  j["sim_completed"] = sim.size();
  j["send_times"] = run.send_times ? "recorded" : "drawn from request_rate and burstiness";
  j["notes"] = notes;
  j["metrics"] = metric_rows(metrics);
  j["summary"] = summary;
  const fs::path dir(o.out);
  write_file_atomic((dir / "against.csv").string(), against_csv(metrics));
  write_file_atomic((dir / "against_requests.csv").string(), requests_table(bt, run.real, sim));
  write_file_atomic((dir / "against.json").string(), j.dump(2) + "\n");

  fmt::print("{} {}: {} requests compared ({} failed, not replayed)\n", run.kind, run.source, turns,
             run.excluded);
  fmt::print(
      "simulated: profile {}, scheduler {}, policy {}, max_num_seqs {}, "
      "max_num_batched_tokens {} (the spec's defaults and -p: the format does not record the "
      "server's)\n",
      o.profile, e.engine.scheduler, p.name, e.engine.max_num_seqs,
      e.engine.max_num_batched_tokens);
  for (const auto& n : notes) fmt::print("note: {}\n", n);
  AgainstReplay rep{e.engine.gpu_blocks > 0 ? "given" : "predicted", result.summary.gpu_blocks, ".",
                    metrics};
  int width = 26;
  for (const auto& m : metrics) width = std::max(width, static_cast<int>(m.metric.size()));
  fmt::print("{}", against_table({rep}, width));
  fmt::print("summary: {}\n", summary);
  fmt::print("wrote {}, {}, {} and the simulated run's outputs in {}\n",
             (dir / "against.json").string(), (dir / "against.csv").string(),
             (dir / "against_requests.csv").string(), o.out);
  return 0;
}

}  // namespace isim::exp
