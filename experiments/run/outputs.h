// Output files of a run and the terminal summary table.
//
// Contract: every writer is deterministic (no clocks, no hostnames, fixed key order, shortest
// round-trip number formatting), so the same experiment and seed give byte-identical files:
// summary.json, sessions.csv, timeseries.csv and config.resolved.yaml (with provenance: the
// profile's source, the git sha, the seed and the trace's fingerprint). Runs by a live executor
// are the exception: their clock is measured, so their times (and summary.json's `executor`
// section) differ from run to run; their token streams and integrity results do not.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/run/run.h"

namespace isim::exp {

// part / total, or 0 for an empty total (the waste shares of summary.json and the table).
double share_of(double part, double total);

// A statistic as {n, mean, p50, p90, p95, p99, max}; over no values each is null (an empty
// results.csv cell), not 0.
nlohmann::ordered_json stat_json(const sim::Stat& s);
nlohmann::ordered_json summary_json(const sim::Summary& s, const std::string& policy);

// The per-turn parts of summary.json (experiments/run/outputs_turns.cpp): request_ttft_s,
// request_latency_s, itl_max_s, turn_goodput (null values without a turn SLO), and when asked
// for windows (metrics.window_s) and recovery_s / recovery_max_s (metrics.shifts_s; null: never
// recovered). Called by summary_json.
void add_turn_json(nlohmann::ordered_json& j, const sim::Summary& s);
// windows.csv: one row per window of `s.windows` (empty cells: not applicable).
void write_windows_csv(const std::string& path, const sim::Summary& s);

// The fleet parts of summary.json (experiments/run/outputs_fleet.cpp): `lost_kv_reuse_tokens`
// by cause and `cluster` (router, replicas, load imbalance, migrations, and with `per_replica`
// one entry per replica).
void add_fleet_json(nlohmann::ordered_json& j, const cluster::RunResult& r, bool per_replica);

// Writes the four files into `dir` (created if missing), and bench.json (vLLM bench serve's
// result JSON: experiments/run/bench_json.h), windows.csv with metrics.window_s;
// with `cluster:` also replicas.csv, and
// summary.json gains `cluster` and `lost_kv_reuse_tokens`, sessions.csv the replica columns.
void write_run(const std::string& dir, const Experiment& e, const Inputs& in, const PolicySpec& p,
               const cluster::RunResult& r);

struct TableRow {
  std::string policy;
  sim::Summary summary;
};
// One row per policy: normalized latency (mean, p99), TTFT (mean, p99), with an SLO the share
// of sessions meeting it and the goodput (sessions/s within it), throughput over the busy
// window (sessions/s, tokens/s), the busy window and the makespan, recomputed tokens, swapped
// GiB, and waste shares.
std::string summary_table(const std::vector<TableRow>& rows);

struct FleetRow {
  std::string policy;
  sim::Summary summary;
  cluster::FleetStats fleet;
  cluster::DisaggStats disagg;
};
// For runs with `cluster:`: the fleet, its router and load imbalance, migrations, and lost KV
// reuse by cause.
std::string fleet_table(const std::vector<FleetRow>& rows);
// For disaggregated fleets: planner, P95 TTFT, mean e2e, throughput, KV transfers, role
// switches and lost KV reuse.
std::string disagg_table(const std::vector<FleetRow>& rows);

}  // namespace isim::exp
