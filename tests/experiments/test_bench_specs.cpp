// The benchmark specs of scripts/bench (experiments/specs/bench-*.yaml) say what they simulate in
// their comments and in docs/performance.md; these cases hold them to it. Timing is never tested.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "experiments/run/run.h"
#include "experiments/spec/experiment.h"
#include "tests/test_paths.h"

namespace {

std::string bench_spec(const std::string& name) {
  return isim::test::source_dir() + "/experiments/specs/" + name;
}

// bench-fleet.yaml draws from the public InferCept mix (../shared/data).
bool bench_mix_present() {
  return std::filesystem::exists(isim::test::shared_data() +
                                 "/infercept-mix/merged_exp_uniform.json");
}

}  // namespace

TEST_CASE("bench-peer.yaml: the peers' workload, 512 in / 128 out on vllm-v1 with budget 2048") {
  // 50 of its 100,000 requests (trace.sessions): the spec itself, scaled down.
  const auto e = isim::exp::load_experiment(bench_spec("bench-peer.yaml"), {"trace.sessions=50"});
  CHECK(e.trace.from == "generator");
  CHECK(e.arrival.process == "poisson");
  CHECK(e.arrival.rate == 10.0);
  CHECK(e.engine.scheduler == "vllm-v1");
  CHECK(e.engine.max_num_batched_tokens == 2048);
  const auto in = isim::exp::prepare(e);
  REQUIRE(in.trace.size() == 50);
  REQUIRE(e.policies.size() == 1);
  const auto r = isim::exp::run_policy(e, in, e.policies[0], /*check_invariants=*/true);
  CHECK(r.summary.finished == 50);
  // Each request prefills its 512-token prompt once (no two prompts share a prefix, and 10/s
  // of 640 tokens preempts nothing) and decodes 127 tokens after the first, which the prefill
  // step emits: 50 x 512 = 25,600 prefill and 50 x 127 = 6,350 decode tokens.
  CHECK(r.summary.counters.prefill_tokens == 25600);
  CHECK(r.summary.counters.decode_tokens == 6350);
  CHECK(r.summary.counters.recomputed_tokens == 0);
}

TEST_CASE("bench-fleet.yaml: 10,000,000 sessions on 1,024 replicas at 2 sessions/s each" *
          doctest::skip(isim::test::absent(!bench_mix_present()))) {
  const auto e = isim::exp::load_experiment(bench_spec("bench-fleet.yaml"), {});
  CHECK(e.trace.draw == 10000000);
  CHECK(e.cluster.replicas() == 1024);
  CHECK(e.cluster.router == "session-affinity");
  CHECK(e.arrival.rate == 2.0 * 1024);  // bench-100k.yaml's 2 sessions/s on each replica
}
