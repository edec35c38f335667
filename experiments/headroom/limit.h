// What limits a spec's headroom: the factor `isim headroom` names from the run at the first
// failing load above its answer. The facts are read from the run (limit_facts), the factor is
// decided from the facts alone (classify_limit), so each test can be checked by hand.
//
// Contract (facts of one simulated run under the spec's `slo:`):
// - kv_peak: the highest share of a replica's GPU KV blocks in use at any time-series sample,
//   over every replica (used / that replica's GPU blocks); preemptions: the engines' preemptions
//   (a running session out of KV blocks) plus idle evictions (idle KV dropped so that something
//   could run); skipped: sessions that can never fit in KV.
// - overloaded, queue_growth_per_s: the run's overload verdict (experiments/run/goodput.h: the
//   queue of waiting and swapped sessions grows, by least squares over the arrivals less a 20%
//   warm-up, faster than 5% of the arrival rate).
// - ttft_miss: the larger of the share of sessions over a ttft_s or resume_ttft_s limit and
//   the share of completed turns over request_ttft_s; tpot_miss: the same for tpot_s and
//   itl_max_s; other_miss: the share of sessions over normalized_latency_s or e2e_s. A session
//   over two limits counts in each; a metric undefined for a session is not held against it.
// - classify_limit, the first that holds:
//     memory  skipped > 0, preemptions > 0 or kv_peak >= kKvFullShare: KV capacity binds;
//     queue   overloaded: throughput below the arrival rate, the backlog grows to the end;
//     ttft    ttft_miss > 0 and ttft_miss >= tpot_miss;
//     tpot    tpot_miss > 0 (TPOT or inter-token latency);
//     latency other_miss > 0 (only normalized latency or e2e miss);
//     none    nothing above (a run that passed).
#pragma once

#include <cstdint>
#include <string>

#include "cluster/run_result.h"
#include "experiments/spec/experiment.h"

namespace isim::exp {

inline constexpr double kKvFullShare = 0.95;  // a KV peak at or above this share binds

enum class Limit { kNone, kMemory, kQueue, kTtft, kTpot, kLatency };
// "none", "memory", "queue", "ttft", "tpot", "latency" (headroom.json and .csv).
std::string limit_name(Limit l);
// One line for the printed table: "memory (KV peak 100%, 12 preemptions)", ...
struct LimitFacts;
std::string limit_why(Limit l, const LimitFacts& f);

struct LimitFacts {
  double kv_peak = 0;
  int64_t preemptions = 0;
  int64_t skipped = 0;
  bool overloaded = false;
  double queue_growth_per_s = 0;
  double ttft_miss = 0, tpot_miss = 0, other_miss = 0;
};

LimitFacts limit_facts(const cluster::RunResult& r, const RunSlo& slo, const TurnSlo& turn_slo);
Limit classify_limit(const LimitFacts& f);

}  // namespace isim::exp
