// Scheduler `chunked` (sim/scheduler.h): a few lines over the shared steps of sim/batch_steps.h.
#include <memory>

#include "sim/batch_steps.h"

namespace isim::sim::schedulers {

namespace {

// Sarathi-Serve / vLLM v1: decodes first, then chunked prefills fill the token budget:
// sessions part-way through a prefill, then swap-ins, then new admissions.
class Chunked final : public Scheduler {
 public:
  std::string name() const override { return "chunked"; }
  SchedulerTraits traits() const override {
    SchedulerTraits t;
    t.steady_admission = true;
    return t;
  }
  void form_batch(BatchContext& c) override {
    schedule_decodes(c);
    schedule_recompute_chunks(c);
    continue_prefills(c);
    swap_in(c);
    admit_waiting(c, /*whole=*/false);
  }
};

}  // namespace

void add_scheduler_chunked(SchedulerRegistry& reg) {
  reg.add("chunked", "decode-first, chunked prefill fills the token budget (Sarathi-Serve style)",
          [] { return std::make_unique<Chunked>(); });
}

}  // namespace isim::sim::schedulers
