// Intercepts: the timers of paused sessions, and what happens when one ends.
//
// Contract:
// - A session that pauses for an intercept of d seconds (`paused`) has its end on the queue at
//   now + d. When it ends the router is asked again: the holder resumes it, or exports it (its
//   KV dropped and counted as lost reuse by migration) and the chosen replica admits it. With
//   roles, Roles::place_resume decides; with tiers, the KV may come back from a tier or a peer
//   first (Tiers::resume_with_tiers), and the turn starts when it lands.
// - An intercept that ends while its session's KV moves between replicas (a role switch's
//   paused move) resumes when the KV lands (Roles::resume_on_landing).
// Events: kEnd (arg: trace index).
#pragma once

#include "cluster/fleet.h"

namespace isim::cluster {

class Intercepts final : public Component {
 public:
  enum Event : int32_t { kEnd = 0 };

  explicit Intercepts(Fleet& f) : Component(f) {}
  void handle(const sim::Event& ev) override;
  // Replica r paused handle h (session s) for `duration`.
  void paused(int32_t r, int32_t h, const sim::SessionState& s, sim::Nanos duration);
  // Session i's intercept ends at t (a pause held in a window, cluster/window.h).
  void ends_at(int32_t i, sim::Nanos t) { schedule(t, sim::kPrioInterceptEnd, kEnd, i); }
  // Routes session i's next turn and resumes it; `ended_at` < 0: its intercept ends now.
  void resume(int32_t i, sim::Nanos ended_at);
  // Resumes paused session h on replica r; with roles, its turn exports when r prefills only.
  void resume_on(int32_t r, int32_t h, double intercept_s, sim::Nanos ended_at);
};

}  // namespace isim::cluster
