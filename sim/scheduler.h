// Scheduler: forms a replica's batch each iteration.
//
// Contract:
// - `form_batch(context)` is called once per iteration, after the intercept policy's
//   before_iteration; it adds work to the batch only through the BatchContext's moves
//   (sim/batch_context.h), usually through the shared steps of sim/batch_steps.h. Any state a
//   scheduler keeps across its own steps (vLLM v1's partial-prefill counts) is its own.
// - `whole_prefills()` true means a prompt (or a discarded context) is only ever prefilled in
//   one piece, so a session whose context exceeds max_num_batched_tokens can never run; the
//   engine then skips it at admission time and says why.
// - `traits()` says how the replica's bookkeeping is done for it (SchedulerTraits).
// - Registered by name (`scheduler_registry()`). Adding one: a file in sim/schedulers/ defining
//   `void add_scheduler_NAME(SchedulerRegistry&)` (one `reg.add`), plus NAME on the
//   ISIM_SCHEDULERS line below. Nothing checks a scheduler's name.
#pragma once

#include <memory>
#include <string>

#include "core/registry.h"

namespace isim::sim {

class BatchContext;

// How a scheduler wants the engine's bookkeeping done (all false: the InferCept-era rules).
struct SchedulerTraits {
  bool admission_order = false;       // running set in admission order, not arrival order
  bool preempt_to_front = false;      // a preempted session goes to the front of waiting
  bool hash_every_block = false;      // every full KV block is cached, not only prompt blocks
  bool logits_every_request = false;  // lm_head runs for every scheduled sequence
  bool budget_knobs = false;  // reads EngineConfig::scheduler_knobs (the vLLM v1 budget knobs)
  // While only decodes run (the free pool only shrinks), the head of the waiting or swapped
  // queue that did not fit at one step fits at no later one: its admission test compares a
  // need that decodes do not change with the free blocks (sim/decode_run.h).
  bool steady_admission = false;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string name() const = 0;
  virtual void form_batch(BatchContext& c) = 0;
  virtual bool whole_prefills() const { return false; }
  virtual SchedulerTraits traits() const { return {}; }
};
using SchedulerRegistry = Registry<Scheduler>;
const SchedulerRegistry& scheduler_registry();

#define ISIM_SCHEDULERS(X) X(vllm_v0) X(chunked) X(vllm_v1)

namespace schedulers {
#define ISIM_DECLARE_SCHEDULER(name) void add_scheduler_##name(SchedulerRegistry& reg);
ISIM_SCHEDULERS(ISIM_DECLARE_SCHEDULER)
#undef ISIM_DECLARE_SCHEDULER
}  // namespace schedulers

}  // namespace isim::sim
