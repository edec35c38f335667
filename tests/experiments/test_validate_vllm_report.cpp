// The report of isim validate --against vllm (experiments/validate/validate_vllm_report.h): the
// capacity error, the summary line naming latency and capacity errors, and the table, on hand-built
// replays whose errors are worked out by hand.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "experiments/validate/validate_vllm_report.h"

using namespace isim;

TEST_CASE("against vllm: the capacity error and the summary line, by hand") {
  CHECK(exp::grouped(2814) == "2,814");
  CHECK(exp::grouped(41408000) == "41,408,000");
  CHECK(exp::grouped(999) == "999");
  // (2814 - 2588) / 2588 = 226 / 2588 = 0.08733
  CHECK(exp::capacity_line(2814, 2588) ==
        "capacity error: +8.73% GPU KV blocks (predicted 2,814 vs vLLM's 2,588)");
  CHECK(exp::capacity_line(2376, 2588) ==
        "capacity error: -8.19% GPU KV blocks (predicted 2,376 vs vLLM's 2,588)");
  auto replay = [](const std::string& from, int64_t blocks, double sim) {
    exp::AgainstReplay r{from, blocks, ".", {}};
    for (const char* m : {"ttft_s.mean", "ttft_s.p50", "ttft_s.p90", "ttft_s.p99", "tpot_s.mean",
                          "tpot_s.p50", "tpot_s.p99", "e2e_s.mean", "e2e_s.p50", "e2e_s.p99",
                          "throughput_tokens_per_s", "makespan_s"})
      r.metrics.push_back({m, 100, sim});
    r.metrics[5].sim = 98;  // TPOT p50 -2%
    return r;
  };
  const std::vector<exp::AgainstReplay> two{replay("predicted", 2814, 90),
                                            replay("vllm", 2588, 101)};
  CHECK(exp::against_summary(two, 2588) ==
        "latency error (at vLLM's 2,588 blocks): TTFT mean +1.0%, p50 +1.0%, p90 +1.0%, TPOT "
        "mean +1.0%, p50 -2.0%, e2e mean +1.0%, makespan +1.0%; capacity error: +8.73% GPU KV "
        "blocks (predicted 2,814 vs vLLM's 2,588); at the predicted 2,814 blocks: TTFT mean "
        "-10.0%, p50 -10.0%, p90 -10.0%, TPOT mean -10.0%, p50 -2.0%, e2e mean -10.0%, makespan "
        "-10.0%");
  // The rule predicting vLLM's count exactly: one replay, a zero capacity error.
  CHECK(exp::against_summary({replay("predicted", 2588, 101)}, 2588)
            .ends_with("; capacity error: +0.00% GPU KV blocks (predicted 2,588 vs vLLM's 2,588)"));
  // A count given with -p engine.gpu_blocks is no prediction.
  CHECK(exp::against_summary({replay("given", 2700, 90), replay("vllm", 2588, 101)}, 2588)
            .find("; capacity error: not measured (the block count was given, not predicted); "
                  "at the given 2,700 blocks: TTFT mean -10.0%") != std::string::npos);
  // No count in the run: the error cannot be split.
  CHECK(exp::against_summary({replay("predicted", 2814, 90)}, std::nullopt) ==
        "error at the predicted 2,814 blocks (latency and capacity together: the run does not "
        "state vLLM's block count): TTFT mean -10.0%, p50 -10.0%, p90 -10.0%, TPOT mean -10.0%, "
        "p50 -2.0%, e2e mean -10.0%, makespan -10.0%");
  const std::string table = exp::against_table(two);
  CHECK(table.find("sim: predicted    error      sim: vLLM's    error") != std::string::npos);
  CHECK(table.find("2,814 blocks") != std::string::npos);
  CHECK(table.find("  tpot_s.p50                          100               98    -2.0%") !=
        std::string::npos);
}
