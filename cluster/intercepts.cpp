// The intercept timers and the resume of a session whose intercept ended (cluster/intercepts.h).
#include "cluster/intercepts.h"

#include <algorithm>

#include "cluster/planning.h"
#include "cluster/roles.h"
#include "cluster/tiers.h"

namespace isim::cluster {

void Intercepts::handle(const sim::Event& ev) {
  if (ev.type != kEnd) unknown(ev);
  const auto i = static_cast<int32_t>(ev.arg);
  if (Planning* planning = f_.parts().planning) planning->intercept_ended(i);
  const Location at = f_.ledger().where(i);
  if (f_.engine(at.replica).view().session(at.handle).moving_paused) {
    if (Tiers* tiers = f_.parts().tiers; tiers && tiers->prefetching(i)) {
      tiers->resume_on_landing(i, f_.now());  // a prefetch: resumes when it lands
      return;
    }
    f_.parts().roles->resume_on_landing(i, f_.now());  // resumes when its KV lands
    return;
  }
  resume(i, -1);
}

void Intercepts::paused(int32_t r, int32_t h, const sim::SessionState& s, sim::Nanos duration) {
  schedule(f_.now() + duration, sim::kPrioInterceptEnd, kEnd, s.idx);
  if (Planning* planning = f_.parts().planning) planning->paused(s);
  if (Roles* roles = f_.parts().roles) roles->paused(r, h, s);
}

void Intercepts::resume(int32_t i, sim::Nanos ended_at) {
  const Location at = f_.ledger().where(i);
  sim::Engine& holder = f_.replica(at.replica);
  const sim::SessionState& s = holder.view().session(at.handle);
  const trace::Session& src = f_.source(i);
  const auto seg = static_cast<size_t>(s.segments_done());
  const double duration_s = src.segments[seg].intercept->duration_s;
  RouteRequest q;
  q.session = i;
  q.resume = true;
  q.holder = at.replica;
  q.holder_kv_tokens = s.kv;
  q.holder_gpu_blocks = static_cast<int64_t>(s.gpu_blocks.size());
  q.context_tokens = s.context;
  const trace::Segment& next = src.segments[seg + 1];
  if (next.event.kind == trace::ContextEventKind::kReset) {
    // The summary replaces the context; of the KV held, only the surviving tokens still count.
    q.context_tokens = next.event.tokens;
    q.holder_kv_tokens = next.kv_surviving(s.kv);
    q.holder_gpu_blocks =
        std::min(q.holder_gpu_blocks, q.holder_kv_tokens / holder.view().block_tokens());
  }
  q.context_tokens += next.input;
  Tiers* tiers = f_.parts().tiers;
  if (Roles* roles = f_.parts().roles) {
    roles->place_resume(i, q, duration_s, ended_at);
    return;
  }
  const int32_t r = f_.route(q);
  ++f_.counts().resumed[static_cast<size_t>(r)];
  f_.touch(r);
  if (tiers && tiers->resume_with_tiers(q, r, duration_s, ended_at)) return;
  if (r == at.replica) {
    holder.resume(at.handle, duration_s, ended_at);
    return;
  }
  sim::SessionState moved = holder.handoff().export_paused(at.handle, sim::LostCause::kMigration);
  f_.touch(at.replica);  // its freed blocks may let a waiting session in
  ++moved.m.migrations;
  ++f_.counts().migrations;
  f_.ledger().placed(i, r, f_.replica(r).admit_resumed(std::move(moved), duration_s, ended_at));
}

void Intercepts::resume_on(int32_t r, int32_t h, double intercept_s, sim::Nanos ended_at) {
  if (const Roles* roles = f_.parts().roles)
    f_.replica(r).handoff().set_export(h, roles->role(r) == Role::kPrefill);
  f_.replica(r).resume(h, intercept_s, ended_at);
}

}  // namespace isim::cluster
