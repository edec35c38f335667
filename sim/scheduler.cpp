// The two iteration schedulers. Each is a few lines over the engine's batch-forming steps.
#include "sim/scheduler.h"

namespace isim::sim {

namespace {

// vLLM v0 (InferCept's baselines): whole prefills first and alone; otherwise decode everyone,
// and swap in only when nobody had to be preempted. Synchronously swapped sessions block new
// admissions. Chunked recompute (min-waste) rides along with the decodes.
class VllmV0 final : public Scheduler {
 public:
  std::string name() const override { return "vllm-v0"; }
  bool whole_prefills() const override { return true; }
  void schedule(BatchSteps& e) override {
    if (!e.has_swapped()) e.admit_waiting(/*whole=*/true);
    if (e.batch_has_prefill()) return;
    bool clean = e.schedule_decodes();
    e.schedule_recompute_chunks();  // policies that rebuild KV in chunks mix them with decodes
    if (clean) e.swap_in();
  }
};

// Sarathi-Serve / vLLM v1: decodes first, then chunked prefills fill the token budget:
// sessions part-way through a prefill, then swap-ins, then new admissions.
class Chunked final : public Scheduler {
 public:
  std::string name() const override { return "chunked"; }
  void schedule(BatchSteps& e) override {
    e.schedule_decodes();
    e.schedule_recompute_chunks();
    e.continue_prefills();
    e.swap_in();
    e.admit_waiting(/*whole=*/false);
  }
};

// vLLM v1 (Scheduler.schedule in vllm/v1/core/sched/scheduler.py, read at 0.19-0.30): one
// token-budget pass over the running requests in admission order, preempting the last one
// when blocks run out; then, only in a step that preempted nobody, the waiting queue in order.
class VllmV1 final : public Scheduler {
 public:
  std::string name() const override { return "vllm-v1"; }
  SchedulerTraits traits() const override { return {true, true, true, true, true}; }
  void schedule(BatchSteps& e) override {
    const bool preempted = e.schedule_running_in_order();
    e.schedule_recompute_chunks();  // policies that rebuild KV in chunks keep their lane
    if (preempted) return;
    e.swap_in();
    e.admit_waiting_in_order();
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
            [] { return std::make_unique<VllmV1>(); });
    return reg;
  }();
  return r;
}

}  // namespace isim::sim
