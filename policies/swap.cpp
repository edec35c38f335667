// Swap (InferCept's baseline): copy the KV to CPU at the pause and back at the resume, each
// synchronously: the engine stalls the next iteration for the transfer time from the profile's
// PCIe curve. When the CPU pool is full the engine discards instead and counts it.
#include "policies/builtin.h"

namespace isim::policy {

namespace {

class Swap final : public sim::Policy {
 public:
  std::string name() const override { return "swap"; }
  sim::PauseAction on_pause(const sim::SessionState&, const sim::ReplicaView&) override {
    return sim::PauseAction::kSwap;
  }
};

}  // namespace

void add_policy_swap(PolicyRegistry& reg) {
  reg.add("swap", "copy all KV to CPU synchronously on pause and back on resume (iteration stalls)",
          [](const PolicyParams& p) {
            expect_no_params("swap", p);
            return std::make_unique<Swap>();
          });
}

}  // namespace isim::policy
