// The report of isim validate --against vllm: which replay measures what, the printed table and
// summary line, and the files (against.csv, against.json, against_requests.csv, against.png).
//
// Two errors are kept apart (../shared/design.md, "Fidelity against real servers"):
// - latency error: the replay at vLLM's own GPU block count, when the run states it;
// - capacity error: the predicted block count against vLLM's, (predicted - vLLM's) / vLLM's.
// Contract:
// - The first replay runs at the engine's own count (predicted by the memory rule, or given by
//   -p engine.gpu_blocks); a second runs at vLLM's count when the run states one that differs.
//   The latency replay is the one at vLLM's count; without one, the error mixes both causes and
//   the summary says so.
// - The summary line names each error as latency or capacity; against.json holds the same
//   figures as the printed text (every replay's metrics, the capacity error, the summary line,
//   the assumptions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/validate/validate_vllm.h"

namespace isim::exp {

struct AgainstReplay {
  std::string blocks_from;  // "predicted", "given" (engine.gpu_blocks) or "vllm" (the run's)
  int64_t gpu_blocks = 0;
  std::string dir;  // where its outputs are, relative to --out ("." for the first)
  std::vector<AgainstMetric> metrics;  // compare_latencies' order
};

// Whether `r` ran at vLLM's count: the replay given it (blocks_from "vllm"; with data parallel,
// each core its share), or one whose count equals it.
bool at_vllm_blocks(const AgainstReplay& r, std::optional<int64_t> vllm_blocks);
// 2814 -> "2,814".
std::string grouped(int64_t n);
// (predicted - vllm) / vllm.
double capacity_error(int64_t predicted, int64_t vllm);
// "capacity error: +8.73% GPU KV blocks (predicted 2,814 vs vLLM's 2,588)".
std::string capacity_line(int64_t predicted, int64_t vllm);
// The one-line verdict: the latency error (at vLLM's count), the capacity error, and the errors
// of the other replay, each named; `vllm_blocks` is the run's count when it states one.
std::string against_summary(const std::vector<AgainstReplay>& replays,
                            std::optional<int64_t> vllm_blocks);
// Metric, real, then sim and error of each replay, its block count in the column head; the
// metric column is `metric_width` wide (longer names push their row right).
std::string against_table(const std::vector<AgainstReplay>& replays, int metric_width = 26);

}  // namespace isim::exp
