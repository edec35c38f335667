// Roles: a disaggregated fleet's replica roles (cluster/disagg.h has the settings): where a
// session is prefilled, the queues of prefilled KV waiting for decode room, the transfers that
// move it, and role switches.
//
// Contract:
// - The split (`place_arrival`, `place_resume`) sends a session's prefill to a prefill replica
//   or serves it locally; a resumed turn served locally stays with the KV its holder kept,
//   unless the holder drains. A resumed turn sent to a prefill replica fetches the holder's KV
//   or recomputes it (`split.resume_kv`, cluster/disagg.h). Routes prefer replicas of the pool that
//   are not switching, then the pool, then any replica.
// - A prefilled session's KV (`prefilled`) moves to a decode replica chosen by the router once
//   that replica has room (a FIFO per decode replica; a replica that no longer decodes sends
//   its queue elsewhere), over the source's link (cluster/transfers.h); with `transfer: layer`
//   what the link carried during the last prefill iteration is already there.
// - Switches (`apply`, from the planner, cluster/planning.h): a replica drains first or takes
//   the new role at once, then pays `cost_s` unavailable. A replica that stops decoding keeps,
//   drops or moves the KV of its paused sessions (`paused_kv`); a session paused there later is
//   settled after its instant's events (`settle`). An intercept that ends while its KV moves
//   resumes when it lands (`resume_on_landing`).
// - `settle` (after each instant's events): the import queues, the switches whose work is done,
//   the paused strays.
// Events: kSwitchDone (arg: replica): a switch's cost has been paid.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "cluster/disagg.h"
#include "cluster/fleet.h"
#include "cluster/run_result.h"
#include "cluster/transfers.h"

namespace isim::cluster {

class Roles final : public Component, public TransferClient {
 public:
  enum Event : int32_t { kSwitchDone = 0 };

  // The fleet's Transfers must exist: the roles add two links per replica to it.
  Roles(Fleet& f, const DisaggConfig& cfg, const Planner* planner);
  void handle(const sim::Event& ev) override;
  Role role(int32_t r) const { return roles_[static_cast<size_t>(r)]; }
  bool switching(int32_t r) const { return switching_[static_cast<size_t>(r)] != 0; }
  const std::vector<Role>& roles() const { return roles_; }
  const std::vector<char>& switching() const { return switching_; }
  // Applies a planner's changes now (std::logic_error for an invalid one).
  void apply(const std::vector<RoleChange>& changes);

  void place_arrival(int32_t i, sim::SessionState s, RouteRequest& q);
  void place_resume(int32_t i, RouteRequest& q, double duration_s, sim::Nanos ended_at);
  void prefilled(int32_t r, int32_t h, const sim::SessionState& s, sim::Nanos iteration_start);
  void paused(int32_t r, int32_t h, const sim::SessionState& s);
  void resume_on_landing(int32_t i, sim::Nanos ended_at) { resume_on_landing_[i] = ended_at; }
  void settle();
  void landed(const KvMove& m) override;
  // The roles at t, after the replica samples of t (the last size() of `replica_ts`).
  void sample(sim::Nanos t, const std::vector<ReplicaSample>& replica_ts);
  void fill(RunResult& r) const;

 private:
  // A prefilled session whose KV waits for room on its decode replica.
  struct PendingImport {
    int32_t session = 0;
    int32_t src = 0, src_h = 0;
    sim::Nanos prefilled_at = 0;
    sim::Nanos iteration_start = 0;  // of the iteration that finished the prefill
  };
  int32_t route_in(const RouteRequest& q, int pool);
  void pump_imports();
  bool fetch_resume(int32_t i, int32_t r, double duration_s, sim::Nanos ended_at);
  void start_transfer(int32_t dst, const PendingImport& p);
  void launch(int32_t dst, double send_bytes, KvMove m);
  int32_t link_index(int32_t src, int32_t dst) const;
  void begin_switch(int32_t r, Role to);
  void progress_switches();
  void finish_switch(int32_t r);
  int32_t move_target(int32_t src, int64_t kv);
  // paused_kv for paused session `h` on replica r, which no longer decodes.
  void relocate_paused(int32_t r, int32_t h);
  void settle_strays();

  DisaggConfig cfg_;
  std::vector<Role> roles_;
  std::vector<char> switching_;
  std::vector<char> draining_;  // drain_first: waiting for its work to end (2: paying the cost)
  std::vector<Role> switch_to_;
  int32_t link0_ = 0;  // two links per replica from here: [2r] intra-node, [2r + 1] inter-node
  std::vector<std::deque<PendingImport>> imports_;  // by decode replica
  // Sessions that paused on a replica that no longer decodes, for paused_kv (replica, handle,
  // session), and intercepts that ended while their KV moved (session -> when).
  std::vector<std::array<int32_t, 3>> stray_paused_;
  std::map<int32_t, sim::Nanos> resume_on_landing_;
  DisaggStats stats_;
  double transfer_s_sum_ = 0, wait_s_sum_ = 0, fetch_s_sum_ = 0;
};

}  // namespace isim::cluster
