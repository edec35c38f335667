// The registry of iteration schedulers, and the two that are a few lines over the shared steps
// (sim/batch_steps.h). vLLM v1 has its own file (sim/schedulers/vllm_v1.cpp).
#include "sim/scheduler.h"

#include "sim/batch_steps.h"

namespace isim::sim {

namespace schedulers {
std::unique_ptr<Scheduler> make_vllm_v1();  // sim/schedulers/vllm_v1.cpp
}  // namespace schedulers

namespace {

// vLLM v0 (InferCept's baselines): whole prefills first and alone; otherwise decode everyone,
// and swap in only when nobody had to be preempted. Synchronously swapped sessions block new
// admissions. Chunked recompute (min-waste) rides along with the decodes.
class VllmV0 final : public Scheduler {
 public:
  std::string name() const override { return "vllm-v0"; }
  bool whole_prefills() const override { return true; }
  void form_batch(BatchContext& c) override {
    if (!has_swapped(c)) admit_waiting(c, /*whole=*/true);
    if (c.batch().prefills() > 0) return;
    const bool clean = schedule_decodes(c);
    schedule_recompute_chunks(c);  // policies that rebuild KV in chunks mix them with decodes
    if (clean) swap_in(c);
  }
};

// Sarathi-Serve / vLLM v1: decodes first, then chunked prefills fill the token budget:
// sessions part-way through a prefill, then swap-ins, then new admissions.
class Chunked final : public Scheduler {
 public:
  std::string name() const override { return "chunked"; }
  void form_batch(BatchContext& c) override {
    schedule_decodes(c);
    schedule_recompute_chunks(c);
    continue_prefills(c);
    swap_in(c);
    admit_waiting(c, /*whole=*/false);
  }
};

}  // namespace

const SchedulerRegistry& scheduler_registry() {
  static const SchedulerRegistry r = [] {
    SchedulerRegistry reg("scheduler");
    reg.add("vllm-v0", "prefill-first, whole prompts, no mixing (vLLM v0, InferCept's era)",
            [] { return std::make_unique<VllmV0>(); });
    reg.add("chunked", "decode-first, chunked prefill fills the token budget (Sarathi-Serve style)",
            [] { return std::make_unique<Chunked>(); });
    reg.add("vllm-v1",
            "vLLM v1: running requests first in one token-budget pass, preempt the last "
            "admitted, admit nothing in a step that preempted",
            schedulers::make_vllm_v1);
    return reg;
  }();
  return r;
}

}  // namespace isim::sim
