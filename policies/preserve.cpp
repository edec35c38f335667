// Preserve (InferCept's baseline): keep the KV on the GPU for the whole intercept.
#include "policies/builtin.h"

namespace isim::policy {

namespace {

class Preserve final : public sim::Policy {
 public:
  std::string name() const override { return "preserve"; }
  sim::PauseAction on_pause(const sim::SessionState&, const sim::ReplicaView&) override {
    return sim::PauseAction::kPreserve;
  }
};

}  // namespace

void add_policy_preserve(PolicyRegistry& reg) {
  reg.add("preserve", "keep all KV on the GPU through the intercept", [](const PolicyParams& p) {
    expect_no_params("preserve", p);
    return std::make_unique<Preserve>();
  });
}

}  // namespace isim::policy
