// Scheduler `vllm-v0` (sim/scheduler.h): a few lines over the shared steps of sim/batch_steps.h.
#include <memory>

#include "sim/batch_steps.h"

namespace isim::sim::schedulers {

namespace {

// vLLM v0 (InferCept's baselines): whole prefills first and alone; otherwise decode everyone,
// and swap in only when nobody had to be preempted. Synchronously swapped sessions block new
// admissions. Chunked recompute (min-waste) rides along with the decodes.
class VllmV0 final : public Scheduler {
 public:
  std::string name() const override { return "vllm-v0"; }
  bool whole_prefills() const override { return true; }
  SchedulerTraits traits() const override {
    SchedulerTraits t;
    t.steady_admission = true;
    return t;
  }
  void form_batch(BatchContext& c) override {
    if (!has_swapped(c)) admit_waiting(c, /*whole=*/true);
    if (c.batch().prefills() > 0) return;
    const bool clean = schedule_decodes(c);
    schedule_recompute_chunks(c);  // policies that rebuild KV in chunks mix them with decodes
    if (clean) swap_in(c);
  }
};

}  // namespace

void add_scheduler_vllm_v0(SchedulerRegistry& reg) {
  reg.add("vllm-v0", "prefill-first, whole prompts, no mixing (vLLM v0, InferCept's era)",
          [] { return std::make_unique<VllmV0>(); });
}

}  // namespace isim::sim::schedulers
