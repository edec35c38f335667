#include "experiments/run/outputs.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <unordered_map>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/atomic_file.h"
#include "core/csv.h"
#include "core/input_error.h"
#include "experiments/run/bench_json.h"
#include "experiments/run/goodput.h"
#include "experiments/version.h"
#include "traces/arrival_phases.h"

namespace isim::exp {

namespace fs = std::filesystem;

// A statistic over no sessions is not applicable: null (an empty results.csv cell), not 0.
nlohmann::ordered_json stat_json(const sim::Stat& s) {
  nlohmann::ordered_json j;
  j["n"] = s.n;
  for (auto [k, v] : {std::pair<const char*, double>{"mean", s.mean},
                      {"p50", s.p50},
                      {"p90", s.p90},
                      {"p95", s.p95},
                      {"p99", s.p99},
                      {"max", s.max}})
    j[k] = s.n > 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  return j;
}

namespace {

// `slo` (the per-session limits, {} when none) and `goodput` (null values when none).
void add_goodput_json(nlohmann::ordered_json& j, const sim::SloAttainment& a) {
  j["slo"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : a.limits) j["slo"][k] = v;
  const bool set = !a.limits.empty();
  auto value = [set](auto v) { return set ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); };
  j["goodput"] = {{"sessions", value(a.met)}, {"share", value(a.share)}, {"per_s", value(a.per_s)}};
}

// user-phases: the sessions never started, and the root copies started per phase and class.
void add_phase_starts(nlohmann::ordered_json& j, const trace::ArrivalSpec& a, const trace::Trace& t,
                      const cluster::RunResult& r) {
  j["not_started"] = r.not_started;
  std::unordered_map<std::string, double> at;  // the run's arrival of each started session
  for (const auto& s : r.sessions) at.emplace(s.id, s.arrival_s);
  const auto started = [&](size_t i) {
    const auto it = at.find(t[i].id);
    return it == at.end() ? -1.0 : it->second;
  };
  for (const auto& [c, n] : trace::ran_out(a, t, started)) j["users_ran_out"][c] = n;
  for (const auto& w : trace::phase_starts(a, t, started)) {
    nlohmann::ordered_json p = {
        {"cycle", w.cycle}, {"phase", w.phase}, {"begin_s", w.begin_s}, {"end_s", w.end_s}};
    for (const auto& [c, n] : w.started) p["started"][c] = n;
    j["phase_starts"].push_back(p);
  }
}

// A file's text, rows formatted into it in place (fmt::format_to), not through strings. Either
// built whole and written by commit (write_file_atomic), or, for a file of a row per session,
// made inside write_file_atomic's producer and handed to it a piece at a time (`spill`), so that
// no more than a piece is held: at 10 million sessions sessions.csv is about 2 GB.
struct OutFile {
  explicit OutFile(fs::path p) : path(std::move(p)) {}
  fs::path path;
  fmt::memory_buffer text;
  void commit() const {
    write_file_atomic(path.string(),
                      [&](const PutText& put) { put(std::string_view(text.data(), text.size())); });
  }
  // Hands the text over once it holds `at_least` bytes (0: whatever it holds), keeping none.
  void spill(const PutText& put, size_t at_least) {
    if (text.size() < at_least || text.size() == 0) return;
    put(std::string_view(text.data(), text.size()));
    text.clear();
  }
};
constexpr size_t kSpillBytes = size_t{1} << 20;
OutFile& operator<<(OutFile& f, std::string_view v) {
  f.text.append(v);
  return f;
}
// A number as fmt's "{}", or an empty cell when it is not applicable (< 0).
void put_cell(OutFile& f, double v) {
  if (v >= 0) fmt::format_to(std::back_inserter(f.text), FMT_COMPILE("{}"), v);
}

}  // namespace

double share_of(double part, double total) {
  return total > 0 ? part / total : 0;
}

nlohmann::ordered_json summary_json(const sim::Summary& s, const std::string& policy) {
  nlohmann::ordered_json j;
  j["policy"] = policy;
  j["sessions"] = s.sessions;
  j["finished"] = s.finished;
  j["skipped"] = s.skipped;
  j["makespan_s"] = s.makespan_s;
  j["busy_window_s"] = s.busy_window_s;
  j["throughput_sessions_per_s"] = s.throughput_sessions_s;
  j["throughput_tokens_per_s"] = s.throughput_tokens_s;
  j["overloaded"] = s.overloaded;
  j["queue_growth_per_s"] = s.queue_growth_per_s;
  add_goodput_json(j, s.slo);
  j["normalized_latency_s"] = stat_json(s.normalized_latency);
  j["ttft_s"] = stat_json(s.ttft);
  j["resume_ttft_s"] = stat_json(s.resume_ttft);
  j["turn_ttft_s"] = stat_json(s.turn_ttft);
  j["tpot_s"] = stat_json(s.tpot);
  j["e2e_s"] = stat_json(s.e2e);
  const auto& c = s.counters;
  j["iterations"] = c.iterations;
  j["prefill_tokens"] = c.prefill_tokens;
  j["decode_tokens"] = c.decode_tokens;
  j["recomputed_tokens"] = c.recomputed_tokens;
  j["recompute_gpu_s"] = sim::to_seconds(c.recompute_time);
  j["swapped_out_bytes"] = c.swapped_out_bytes;
  j["swapped_in_bytes"] = c.swapped_in_bytes;
  j["pauses"] = c.pauses;
  j["decisions"] = {{"preserve", c.preserves}, {"discard", c.discards}, {"swap", c.swaps}};
  j["preemptions"] = c.preemptions;
  j["prefix_lookup_tokens"] = c.prefix_lookup_tokens;
  j["prefix_hit_tokens"] = c.prefix_hit_tokens;
  const double turns = static_cast<double>(std::max<int64_t>(c.turns, 1));
  j["turns"] = c.turns;
  j["per_turn"] = {{"gpu_hit_tokens", static_cast<double>(c.turn_gpu_hit_tokens) / turns},
                   {"cpu_hit_tokens", static_cast<double>(c.turn_cpu_hit_tokens) / turns},
                   {"recomputed_tokens", static_cast<double>(c.turn_recompute_tokens) / turns}};
  j["dropped_blocks"] = c.dropped_blocks;
  j["oversized_restores"] = c.oversized_restores;
  j["prefix_hit_rate"] =
      c.prefix_lookup_tokens > 0
          ? static_cast<double>(c.prefix_hit_tokens) / static_cast<double>(c.prefix_lookup_tokens)
          : 0.0;
  j["context_signals"] = {{"resets", c.resets},
                          {"reset_released_tokens", c.reset_released_tokens},
                          {"forks", c.forks},
                          {"worthless_freed_blocks", c.worthless_freed_blocks}};
  j["idle_evictions"] = c.idle_evictions;
  j["swap_fallback_discards"] = c.swap_fallback_discards;
  j["busy_s"] = sim::to_seconds(c.busy_time);
  j["swap_stall_s"] = sim::to_seconds(c.stall_time);
  const auto& w = s.waste;
  double tot = w.total();
  j["waste_block_seconds"] = {{"active", w.active},       {"recompute", w.recompute},
                              {"preserved", w.preserved}, {"swap_stall", w.swap_stall},
                              {"free", w.free},           {"total", tot}};
  j["waste_share"] = {{"active", share_of(w.active, tot)},
                      {"recompute", share_of(w.recompute, tot)},
                      {"preserved", share_of(w.preserved, tot)},
                      {"swap_stall", share_of(w.swap_stall, tot)},
                      {"free", share_of(w.free, tot)}};
  j["gpu_blocks"] = s.gpu_blocks;
  j["cpu_blocks"] = s.cpu_blocks;
  j["profile_extrapolations"] = s.extrapolations;
  add_turn_json(j, s);
  return j;
}

namespace {

void write_roles(const fs::path& dir, const cluster::RunResult& r) {
  OutFile f{dir / "roles.csv"};
  f << "t_s,mixed,prefill,decode,switching,prefill_queued_tokens,decode_waiting\n";
  for (const auto& s : r.disagg.roles)
    fmt::format_to(std::back_inserter(f.text), FMT_COMPILE("{},{},{},{},{},{},{}\n"), s.t_s,
                   s.mixed, s.prefill, s.decode, s.switching, s.prefill_queued_tokens,
                   s.decode_waiting);
  f.commit();
}

void write_fleet_files(const fs::path& dir, const cluster::RunResult& r) {
  if (r.disagg.enabled) write_roles(dir, r);
  OutFile f{dir / "replicas.csv"};
  f << "t_s,replica,running,waiting,paused,swapped,gpu_blocks_used,cpu_blocks_used,"
       "queued_tokens,busy_s\n";
  for (const auto& x : r.replica_timeseries) {
    const auto& t = x.s;
    fmt::format_to(std::back_inserter(f.text), FMT_COMPILE("{},{},{},{},{},{},{},{},{},{}\n"),
                   t.t_s, x.replica, t.running, t.waiting, t.paused, t.swapped, t.gpu_blocks_used,
                   t.cpu_blocks_used, t.queued_tokens, t.busy_s);
  }
  f.commit();
}

}  // namespace

// The run's files, each written whole; summary.json, the mark of a complete run folder, is
// removed first and written last, so a folder without it is one an interrupt cut short.
void write_run(const std::string& dir, const Experiment& e, const Inputs& in, const PolicySpec& p,
               const cluster::RunResult& r) {
  fs::create_directories(dir);
  const fs::path summary_path = fs::path(dir) / "summary.json";
  remove_file(summary_path.string());
  std::string summary_text;
  {
    auto j = summary_json(r.summary, p.name);
    for (const auto& [k, v] : r.policy_facts) j["policy_" + k] = v;
    j["skipped_sessions"] = r.skipped;
    if (e.arrival.process == "user-phases") add_phase_starts(j, e.arrival, in.trace, r);
    if (e.cluster.given) add_fleet_json(j, r, /*per_replica=*/true);
    if (r.executor.live) {
      // Measured, so not byte-reproducible: kept in one section that tools can ignore.
      auto& x = j["executor"];
      x["name"] = e.executor;
      for (const auto& [k, v] : r.executor.facts) x[k] = v;
      x["violations"] = r.executor.violations;
    }
    summary_text = j.dump(2) + "\n";
  }
  const fs::path sessions_csv = fs::path(dir) / "sessions.csv";
  write_file_atomic(sessions_csv.string(), [&](const PutText& put) {
    OutFile f{sessions_csv};  // its text goes to `put` (spill), not through commit
    f << "id,status,arrival_s,first_token_s,finish_s,ttft_s,resume_ttft_s,tpot_s,e2e_s,"
         "intercept_s,normalized_latency_s,output_tokens,returned_tokens,segments,"
         "recomputed_tokens,swapped_out_bytes,swapped_in_bytes,preemptions,prefix_hit_tokens,"
         "meets_slo";
    f << (e.cluster.given ? ",replica_first,replica_last,migrations\n" : "\n");
    const auto out = std::back_inserter(f.text);
    for (const auto& s : r.sessions) {
      // The id is the trace's own text: quoted per RFC 4180 when it holds , " or a line break.
      // Not applicable (a time the session never reached, a metric it has none of, meets_slo
      // without an SLO, a replica it never ran on): an empty cell.
      const bool plain = s.id.find_first_of(",\"\r\n") == std::string::npos;
      f << (plain ? std::string_view(s.id) : std::string_view(csv_field(s.id)));
      fmt::format_to(out, FMT_COMPILE(",{},{},"), s.status, s.arrival_s);
      for (const double v :
           {s.first_token_s, s.finish_s, s.ttft_s, s.resume_ttft_s, s.tpot_s, s.e2e_s}) {
        put_cell(f, v);
        f << ",";
      }
      fmt::format_to(out, FMT_COMPILE("{},"), s.intercept_s);
      put_cell(f, s.normalized_latency_s);
      fmt::format_to(out, FMT_COMPILE(",{},{},{},{},{},{},{},{},"), s.output_tokens,
                     s.returned_tokens, s.segments, s.recomputed_tokens, s.swapped_out_bytes,
                     s.swapped_in_bytes, s.preemptions, s.prefix_hit_tokens);
      f << (e.slo.empty() ? "" : meets_slo(s, e.slo) ? "1" : "0");
      if (e.cluster.given) {
        f << ",";
        put_cell(f, s.replica_first);
        f << ",";
        put_cell(f, s.replica_last);
        fmt::format_to(out, FMT_COMPILE(",{}"), s.migrations);
      }
      f << "\n";
      f.spill(put, kSpillBytes);
    }
    f.spill(put, 0);
  });
  {
    OutFile f{fs::path(dir) / "timeseries.csv"};
    f << "t_s,running,waiting,paused,swapped,gpu_blocks_used,cpu_blocks_used,queued_tokens,"
         "batch_tokens\n";
    for (const auto& t : r.timeseries)
      fmt::format_to(std::back_inserter(f.text), FMT_COMPILE("{},{},{},{},{},{},{},{},{}\n"), t.t_s,
                     t.running, t.waiting, t.paused, t.swapped, t.gpu_blocks_used,
                     t.cpu_blocks_used, t.queued_tokens, t.batch_tokens);
    f.commit();
  }
  if (e.cluster.given) write_fleet_files(dir, r);
  if (!r.summary.windows.empty())
    write_windows_csv((fs::path(dir) / "windows.csv").string(), r.summary);
  write_bench_json(dir, e, in, p, r);  // vLLM bench serve's result JSON
  {
    Experiment one = e;
    one.policies = {p};
    YAML::Node y = one.resolved();
    YAML::Node prov;
    prov["isim_version"] = ISIM_VERSION;
    prov["git_sha"] = ISIM_GIT_SHA;
    prov["seed"] = e.seed;
    prov["trace_sessions"] = in.trace.size();
    prov["trace_fingerprint"] = in.trace_fingerprint;
    prov["profile_path"] = e.profile;
    for (const auto& [k, v] : in.profile.provenance) prov["profile_provenance"][k] = v;
    prov["policy"] = p.name;
    for (const auto& [k, v] : r.policy_facts) prov["policy_" + k] = v;
    for (const auto& note : in.notes) prov["notes"].push_back(note);
    y["provenance"] = prov;
    YAML::Emitter em;
    em << y;
    write_file_atomic((fs::path(dir) / "config.resolved.yaml").string(),
                      std::string(em.c_str()) + "\n");
  }
  write_file_atomic(summary_path.string(), summary_text);
}

}  // namespace isim::exp
