// Discard and ImprovedDiscard (InferCept's baselines): drop the KV at every pause and rebuild it
// on resume. They differ only in where the resumed session queues.
#include "policies/builtin.h"

namespace isim::policy {

namespace {

class Discard final : public sim::Policy {
 public:
  explicit Discard(bool keep_order) : keep_order_(keep_order) {}
  std::string name() const override { return keep_order_ ? "improved-discard" : "discard"; }
  sim::PauseAction on_pause(const sim::SessionState&, const sim::ReplicaView&) override {
    return sim::PauseAction::kDiscard;
  }
  // vLLM treats a resumed request as a new one; InferCept's improvement keeps its arrival order.
  bool resume_at_back() const override { return !keep_order_; }

 private:
  bool keep_order_;
};

}  // namespace

void add_policy_discard(PolicyRegistry& reg) {
  reg.add("discard", "free all KV on pause; recompute on resume at the back of the queue (vLLM)",
          [](const PolicyParams& p) {
            expect_no_params("discard", p);
            return std::make_unique<Discard>(false);
          });
  reg.add("improved-discard", "free all KV on pause; recompute on resume in original arrival order",
          [](const PolicyParams& p) {
            expect_no_params("improved-discard", p);
            return std::make_unique<Discard>(true);
          });
}

}  // namespace isim::policy
