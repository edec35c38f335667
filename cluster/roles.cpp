// A disaggregated fleet's placement (cluster/roles.h): the prefill split, the import queues and
// the KV transfers they start. Switching is in roles_switch.cpp.
#include "cluster/roles.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/fleet_view.h"
#include "cluster/intercepts.h"
#include "cluster/planning.h"
#include "cluster/roles_pool.h"
#include "cluster/tiers.h"

namespace isim::cluster {

Roles::Roles(Fleet& f, const DisaggConfig& cfg, const Planner* planner)
    : Component(f), cfg_(cfg), roles_(cfg.roles), switch_to_(cfg.roles) {
  const auto n = static_cast<size_t>(f.size());
  if (cfg.roles.size() != n) throw std::logic_error("Cluster: one role per replica is needed");
  switching_.assign(n, 0);
  draining_.assign(n, 0);
  link0_ = f.parts().transfers->add(cfg.links.intra_node);
  f.parts().transfers->add(cfg.links.inter_node);
  for (size_t r = 1; r < n; ++r) {
    f.parts().transfers->add(cfg.links.intra_node);
    f.parts().transfers->add(cfg.links.inter_node);
  }
  imports_.resize(n);
  stats_.enabled = true;
  stats_.planner = planner ? planner->name() : "static";
  if (planner) stats_.planner_facts = planner->describe();
}

int32_t Roles::route_in(const RouteRequest& q, int pool) {
  // The pool's replicas that are not switching; failing that, the pool; failing that, all.
  const auto n = static_cast<size_t>(f_.size());
  std::vector<char> mask;
  for (int pass = 0; pass < 3; ++pass) {
    mask.assign(n, 0);
    bool any = false;
    for (size_t r = 0; r < n; ++r) {
      const bool ok = pass == 2 || (in_pool(roles_[r], pool) && (pass == 1 || !switching_[r]));
      mask[r] = ok;
      any = any || ok;
    }
    if (any) break;
  }
  f_.set_mask(std::move(mask));
  const int32_t r = f_.route(q);
  f_.set_mask({});
  return r;
}

void Roles::place_arrival(int32_t i, sim::SessionState s, RouteRequest& q) {
  const SplitConfig& sp = cfg_.split;
  bool to_prefill = sp.mode == "always";
  int64_t uncached = q.context_tokens;
  if (!to_prefill) {
    // llm-d's rule: prefill remotely when the tokens no local replica has cached exceed it.
    RouteView v(f_, q);
    int64_t best = 0;
    for (int32_t r = 0; r < f_.size(); ++r)
      if (!in_pool(roles_[static_cast<size_t>(r)], kPrefillPool))
        best = std::max(best, f_.engine(r).view().cached_prefix_blocks(v.prefix_chain(r)) *
                                  f_.engine(r).view().block_tokens());
    uncached = std::max<int64_t>(q.context_tokens - best, 0);
    to_prefill = uncached > sp.threshold_tokens;
  }
  const int32_t r = route_in(q, to_prefill ? kPrefillPool : kLocalPool);
  if (to_prefill) f_.parts().planning->prefill_request(uncached);
  ++f_.counts().admitted[static_cast<size_t>(r)];
  f_.touch(r);
  s.export_after_prefill = roles_[static_cast<size_t>(r)] == Role::kPrefill;
  f_.ledger().placed(i, r, f_.replica(r).admit(std::move(s)));
}

void Roles::place_resume(int32_t i, RouteRequest& q, double duration_s, sim::Nanos ended_at) {
  const Location at = f_.ledger().where(i);
  sim::Engine& holder = f_.replica(at.replica);
  const SplitConfig& sp = cfg_.split;
  const int64_t uncached = std::max<int64_t>(q.context_tokens - q.holder_kv_tokens, 0);
  const bool to_prefill = sp.mode == "always" || uncached > sp.threshold_tokens;
  const auto hr = static_cast<size_t>(at.replica);
  int32_t r = at.replica;
  // Served locally, a turn stays with the KV its holder kept, unless the holder drains.
  if (to_prefill || in_pool(roles_[hr], kPrefillPool) || draining_[hr])
    r = route_in(q, to_prefill ? kPrefillPool : kLocalPool);
  if (to_prefill) f_.parts().planning->prefill_request(uncached);
  const bool exports = roles_[static_cast<size_t>(r)] == Role::kPrefill;
  ++f_.counts().resumed[static_cast<size_t>(r)];
  f_.touch(r);
  // KV the tiers hold comes back (or is given up) as in a fleet without roles.
  Tiers* tiers = f_.parts().tiers;
  if (tiers && tiers->resume_with_tiers(q, r, duration_s, ended_at)) return;
  if (r == at.replica) {
    holder.handoff().set_export(at.handle, exports);
    holder.resume(at.handle, duration_s, ended_at);
    return;
  }
  // Without tiers (which decide by their own rule above), the KV held moves with the turn.
  if (!tiers && to_prefill && cfg_.split.resume_kv == "fetch" && q.holder_kv_tokens > 0) {
    if (fetch_resume(i, r, duration_s, ended_at)) return;
    ++stats_.resume_fetch_fallbacks;  // no room there (or the KV is not on the GPU): recompute
  }
  sim::SessionState moved = holder.handoff().export_paused(at.handle, sim::LostCause::kMigration);
  f_.touch(at.replica);
  ++moved.m.migrations;
  ++f_.counts().migrations;
  moved.export_after_prefill = exports;
  f_.ledger().placed(i, r, f_.replica(r).admit_resumed(std::move(moved), duration_s, ended_at));
}

// split.resume_kv fetch: the KV the holder kept moves to r over the holder's link, and the
// turn resumes on r when it lands (landed). False: r has no room, or the KV is not movable.
bool Roles::fetch_resume(int32_t i, int32_t r, double duration_s, sim::Nanos ended_at) {
  const Location at = f_.ledger().where(i);
  sim::Engine& holder = f_.replica(at.replica);
  sim::Engine& dst = f_.replica(r);
  if (!holder.handoff().can_move_paused(at.handle)) return false;
  const int64_t kv = holder.view().session(at.handle).kv;
  if (!dst.handoff().can_import(kv) &&
      !dst.handoff().make_room(sim::blocks_for(kv, dst.view().block_tokens())))
    return false;
  holder.handoff().start_move(at.handle);
  KvMove m;
  m.kind = KvMove::kFetchPeer;
  m.session = i;
  m.src = at.replica;
  m.src_h = at.handle;
  m.since = ended_at < 0 ? f_.now() : ended_at;
  m.intercept_s = duration_s;
  m.tokens = kv;
  ++f_.counts().migrations;
  launch(r, kv_bytes(holder, kv), m);
  ++stats_.resume_fetches;
  stats_.resume_fetched_tokens += kv;
  stats_.resume_fetch_bytes += kv_bytes(holder, kv);
  f_.touch(at.replica);
  return true;
}

void Roles::prefilled(int32_t r, int32_t h, const sim::SessionState& s,
                      sim::Nanos iteration_start) {
  RouteRequest q;
  q.session = s.idx;
  q.context_tokens = s.context;
  q.kv_arrives = true;
  const int32_t dst = route_in(q, kLocalPool);
  imports_[static_cast<size_t>(dst)].push_back({s.idx, r, h, f_.now(), iteration_start});
}

void Roles::settle() {
  pump_imports();
  progress_switches();
  settle_strays();
}

void Roles::pump_imports() {
  bool changed = true;
  while (changed) {
    changed = false;
    for (int32_t r = 0; r < f_.size(); ++r) {
      auto& q = imports_[static_cast<size_t>(r)];
      const auto rs = static_cast<size_t>(r);
      if (!q.empty() && (!in_pool(roles_[rs], kLocalPool) || draining_[rs])) {
        // Its replica no longer decodes: the KV goes elsewhere.
        std::deque<PendingImport> moved, stay;
        moved.swap(q);
        for (const PendingImport& p : moved) {
          RouteRequest rq;
          rq.session = p.session;
          rq.context_tokens = f_.engine(p.src).view().session(p.src_h).context;
          rq.kv_arrives = true;
          const int32_t to = route_in(rq, kLocalPool);
          (to == r ? stay : imports_[static_cast<size_t>(to)]).push_back(p);
          changed = changed || to != r;
        }
        q.swap(stay);
        if (changed) continue;
      }
      while (!q.empty()) {
        const PendingImport p = q.front();
        const sim::Engine& e = f_.engine(r);
        if (p.src == r) {
          f_.replica(r).handoff().keep_exported(p.src_h);
          f_.touch(r);
        } else {
          const int64_t kv = f_.engine(p.src).view().session(p.src_h).kv;
          if (!e.handoff().can_import(kv)) {
            // Nothing here will free blocks by itself: give up idle KV for it.
            if (e.busy() || !e.view().running().empty() || !e.view().queues().importing().empty() ||
                !f_.replica(r).handoff().make_room(sim::blocks_for(kv, e.view().block_tokens())))
              break;
          }
          start_transfer(r, p);
        }
        q.pop_front();
        changed = true;
      }
    }
  }
}

int32_t Roles::link_index(int32_t src, int32_t dst) const {
  const int32_t per_node = cfg_.links.replicas_per_node;
  return link0_ + 2 * src + (src / per_node != dst / per_node ? 1 : 0);
}

void Roles::start_transfer(int32_t dst, const PendingImport& p) {
  sim::Engine& src = f_.replica(p.src);
  const double bytes = kv_bytes(src, src.view().session(p.src_h).kv);
  const Link& link = f_.parts().transfers->link(link_index(p.src, dst));
  double send = bytes;
  if (cfg_.links.transfer == "layer" && f_.now() == p.prefilled_at) {
    // Streamed layer by layer during the last prefill iteration: what the link could carry
    // meanwhile has gone, but never the last layer, which exists only at the iteration's end.
    const int layers = std::max(1, src.view().cost_model().profile().model.layers);
    const double carried =
        static_cast<double>(p.prefilled_at - p.iteration_start) * link.spec().gbps;
    send = std::max(bytes / layers, bytes - carried);
  }
  KvMove m;
  m.kind = KvMove::kPrefilled;
  m.session = p.session;
  m.src = p.src;
  m.src_h = p.src_h;
  m.since = p.prefilled_at;
  launch(dst, send, m);
  wait_s_sum_ += sim::to_seconds(f_.now() - p.prefilled_at);
  stats_.transfer_bytes += bytes;
}

// Reserves the destination's blocks for m's session and starts sending `send_bytes` of it.
void Roles::launch(int32_t dst, double send_bytes, KvMove m) {
  sim::SessionState copy = f_.engine(m.src).view().session(m.src_h);
  copy.gpu_blocks.clear();
  copy.cpu_blocks.clear();
  copy.h = -1;
  if (m.kind == KvMove::kFetchPeer) ++copy.m.migrations;  // the session resumes elsewhere
  m.dst = dst;
  m.dst_h = f_.replica(dst).handoff().reserve_import(std::move(copy));
  m.started_at = f_.now();
  f_.parts().transfers->start(link_index(m.src, dst), send_bytes, m, *this);
  f_.touch(dst);
}

void Roles::landed(const KvMove& t) {
  const int64_t kv = f_.replica(t.src).handoff().finish_export(t.src_h).kv;
  f_.replica(t.dst).handoff().finish_import(t.dst_h, f_.now() - t.since);
  f_.ledger().placed(t.session, t.dst, t.dst_h);
  f_.touch(t.src);
  f_.touch(t.dst);
  if (t.kind == KvMove::kFetchPeer) {
    // A resumed turn's KV reached its prefill replica: the turn starts now, its TTFT counted
    // from the intercept's end.
    fetch_s_sum_ += sim::to_seconds(f_.now() - t.since);
    f_.parts().intercepts->resume_on(t.dst, t.dst_h, t.intercept_s, t.since);
    return;
  }
  if (t.kind == KvMove::kPausedMove) {
    ++stats_.switch_moves;
    stats_.switch_moved_tokens += kv;
    auto r = resume_on_landing_.find(t.session);
    if (r != resume_on_landing_.end()) {
      const sim::Nanos ended_at = r->second;
      resume_on_landing_.erase(r);
      f_.parts().intercepts->resume(t.session, ended_at);
    }
    return;
  }
  ++stats_.transfers;
  transfer_s_sum_ += sim::to_seconds(f_.now() - t.started_at);
}

}  // namespace isim::cluster
