// isim validate --against aiperf DIR | guidellm FILE | vllm-bench FILE: the part the three
// benchmark-client formats share: the replay of their recorded requests in the simulator and the
// report of real against simulated metrics, each tool's metrics computed on both sides under
// that tool's own definitions (the readers: against_aiperf.h, against_guidellm.h,
// against_vllm_bench.h).
//
// Contract:
// - A reader turns a result into a BenchRun: the successful requests as RequestRows
//   (experiments/run/request_metrics.h; send_s relative to the first send, session = the
//   conversation's index in order of first send, seg = the turn's index within it), the tool's
//   duration, its metric function, and how to replay. Requests the tool counts as failed
//   (errored, cancelled, incomplete) are neither compared nor replayed; `excluded` counts them.
// - bench_trace: with send times, each conversation is one session whose segment k is turn k.
//   A turn k > 0 whose prompt holds the previous turn's prompt and output (input_k >= input_{k-1}
//   + output_{k-1}, the client resent the history) becomes segment k with the difference as its
//   input, and the gap between the previous turn's last token and this turn's send (clamped to 0)
//   as an intercept of kind `client`; otherwise it starts a session of its own at its send time
//   (the note says how many). In the simulator a later turn is sent that long after the
//   previous turn ends there, so the simulated send times follow the simulated latencies.
//   Without send times (vLLM bench), every request is a session of its own at arrivals drawn
//   from the run's request_rate and burstiness (bench_arrivals); with max_concurrency C and an
//   infinite rate, request i >= C starts when request i - C finishes (C chains: vLLM gives the
//   next request to whichever slot frees first; the chains give it to slot i mod C). With a
//   finite rate the cap is not enforced; a `note: warning:` line says so when the simulated run
//   had more than C requests in flight (peak_in_flight).
// - The replay is one policy, `discard`, on --profile with the spec's engine defaults and the
//   overrides (-p), scheduler --scheduler; the engine's settings are the profile's and the
//   overrides', not the server's (the formats do not record them): the header says so.
// - Error = (sim - real) / real per metric (AgainstMetric). Outputs under --out (refusals
//   before it is made, a KV capacity the profile cannot hold included): trace.jsonl (what was
//   replayed), the simulated run's outputs (write_run), against.csv (metric,real,sim,error) and
//   against.json (kind, source, profile, scheduler, requests, excluded, notes, metrics with error
//   where finite, summary) and against_requests.csv (validate_vllm.h against_requests_csv: each
//   real request by its id (BenchTrace) beside the simulated one; with drawn arrivals the pairs
//   share lengths, not send times), all written atomically. The printed table is against_table's.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "experiments/run/request_metrics.h"
#include "traces/session.h"

namespace isim::exp {

using MetricList = std::vector<std::pair<std::string, double>>;
// A tool's metrics over its successful requests and its run's duration (seconds).
using BenchMetrics = std::function<MetricList(const std::vector<RequestRow>&, double duration_s)>;

struct BenchRun {
  std::string kind;    // aiperf, guidellm, vllm-bench
  std::string source;  // the file or folder read
  std::vector<RequestRow> real;
  std::vector<std::string> session_ids;  // per session index: the conversation's id
  double duration_s = 0;                 // the tool's own duration of the run
  BenchMetrics metrics;
  std::vector<std::string> headline;  // metric names for the summary line
  int64_t excluded = 0;               // failed requests, not compared or replayed
  std::vector<std::string> notes;
  // Without send times (vLLM bench): arrivals from these.
  bool send_times = true;
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  int64_t max_concurrency = 0;  // 0: none
  // The simulated duration: last token - 0 (the benchmark's start, before its first send:
  // vLLM bench's) when set; last token - first send (rows_span_s) otherwise.
  bool duration_from_start = false;
};

struct BenchOptions {
  std::string kind, path, profile, out;
  std::string scheduler;
  std::vector<std::string> overrides;
  int64_t benchmark = -1;  // guidellm: which of the report's benchmarks (-1: the only one)
  uint64_t seed = 1;       // vllm-bench arrivals
};

// The replayed trace, how many turns were split off into sessions of their own, and the id of
// each session's segments (segment_ids[session][seg]) in against_requests.csv: the
// conversation's id for its turn 0, `ID/turn-K` for its turn K > 0; vLLM bench's requests are
// `req-I` (I: the index in the file). A session's id is its first segment's. The real rows
// fill segment_ids in their order.
struct BenchTrace {
  trace::Trace trace;
  int64_t split_turns = 0;
  std::vector<std::vector<std::string>> segment_ids;
};
BenchTrace bench_trace(const BenchRun& run, uint64_t seed);

// `n` send times from the benchmark's start (0), as vLLM bench's get_request draws them
// (vllm-project/vllm @ 009e6d4a, vllm/benchmarks/serve.py): all 0 at an infinite rate;
// otherwise n gaps from a gamma distribution of shape `burstiness` and scale 1 / (rate x
// burstiness) (mean 1 / rate; burstiness 1 is Poisson), the first request after the first gap,
// summed, then all scaled so that the last is sent at exactly n / rate. Seeded (core/rng.h):
// the same draws on every platform, not vLLM's (NumPy's) draws.
std::vector<double> bench_arrivals(int64_t n, double rate, double burstiness, uint64_t seed);

// The most requests in flight at once (a request is in flight over [send, send + e2el)).
int64_t peak_in_flight(const std::vector<RequestRow>& rows);

// Last token of all - first send (0 without rows).
double rows_span_s(const std::vector<RequestRow>& rows);

// The whole command for a BenchRun read by its reader (cli_validate.cpp).
int run_against_bench(const BenchRun& run, const BenchOptions& o);

}  // namespace isim::exp
