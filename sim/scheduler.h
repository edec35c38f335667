// Scheduler: composes a replica's batch-forming steps into one admission policy.
//
// Contract:
// - `schedule(steps)` is called once per iteration, after the intercept policy's
//   before_iteration; it adds work to the batch only through BatchSteps.
// - `whole_prefills()` true means a prompt (or a discarded context) is only ever prefilled in
//   one piece, so a session whose context exceeds max_num_batched_tokens can never run; the
//   engine then skips it at admission time and says why. The engine never checks a scheduler's
//   name.
// - Registered by name (`scheduler_registry()`); adding one is one class plus one line.
#pragma once

#include <memory>
#include <string>

#include "core/registry.h"

namespace isim::sim {

class BatchSteps {
 public:
  virtual ~BatchSteps() = default;
  // Gives every decoding session its next token, preempting when out of blocks. Returns false
  // if it had to preempt.
  virtual bool schedule_decodes() = 0;
  // Continues running sessions that are part-way through a chunked prefill.
  virtual void continue_prefills() = 0;
  // Admits waiting sessions in queue order; `whole` admits only whole prefills.
  virtual void admit_waiting(bool whole) = 0;
  // Swaps in swapped sessions (FCFS) while GPU blocks allow; the iteration stalls for it.
  virtual void swap_in() = 0;
  // Sessions with pending pipelined recompute get chunks of at most max(S - R, 1) tokens in
  // total, R being the decodes already in the batch.
  virtual void schedule_recompute_chunks() = 0;
  // Synchronous swap-ins waiting (vLLM v0 admits no new prompts while there are any).
  virtual bool has_swapped() const = 0;
  virtual bool batch_has_prefill() const = 0;

  // vLLM v1's two passes (sim/engine_v1.cpp). `schedule_running_in_order` gives every running
  // session, in admission order, its next tokens out of the step's budget (1 for a decode,
  // min(left, long_prefill_token_threshold, budget) for a prefill); when blocks run out it
  // preempts the last running session until the allocation fits or the session itself was
  // preempted, and then stops. Returns true if it preempted. `admit_waiting_in_order` admits
  // waiting sessions in queue order (preempted ones first) while the budget, max_num_seqs,
  // the partial-prefill limits, the full-prompt reservation and the watermark allow, and stops
  // at the first that does not fit.
  virtual bool schedule_running_in_order() = 0;
  virtual void admit_waiting_in_order() = 0;
};

// How a scheduler wants the engine's bookkeeping done (all false: the InferCept-era rules).
struct SchedulerTraits {
  bool admission_order = false;       // running set in admission order, not arrival order
  bool preempt_to_front = false;      // a preempted session goes to the front of waiting
  bool hash_every_block = false;      // every full KV block is cached, not only prompt blocks
  bool logits_every_request = false;  // lm_head runs for every scheduled sequence
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string name() const = 0;
  virtual void schedule(BatchSteps& steps) = 0;
  virtual bool whole_prefills() const { return false; }
  virtual SchedulerTraits traits() const { return {}; }
};
using SchedulerRegistry = Registry<Scheduler>;
const SchedulerRegistry& scheduler_registry();

}  // namespace isim::sim
