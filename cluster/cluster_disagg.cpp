// The cluster's disaggregated serving: the prefill split, KV transfers over links, and the
// global check of KV in flight. Planning and role switching are in cluster_roles.cpp.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/cluster.h"
#include "cluster/disagg_state.h"
#include "cluster/tier_state.h"
#include "cluster/fleet_view.h"

namespace isim::cluster {

namespace {
enum Pool : int { kPrefillPool = 0, kLocalPool = 1 };  // local: decode and mixed replicas
bool in_pool(Role r, int pool) { return (r == Role::kPrefill) == (pool == kPrefillPool); }

}  // namespace

Role Cluster::role(int32_t r) const {
  return d_ ? d_->roles[static_cast<size_t>(r)] : Role::kMixed;
}

bool Cluster::switching(int32_t r) const {
  return d_ && d_->switching[static_cast<size_t>(r)];
}

int32_t Cluster::route_in(const RouteRequest& q, int pool) {
  // The pool's replicas that are not switching; failing that, the pool; failing that, all.
  const auto n = static_cast<size_t>(size());
  for (int pass = 0; pass < 3; ++pass) {
    mask_.assign(n, 0);
    bool any = false;
    for (size_t r = 0; r < n; ++r) {
      const bool ok = pass == 2 || (in_pool(d_->roles[r], pool) && (pass == 1 || !d_->switching[r]));
      mask_[r] = ok;
      any = any || ok;
    }
    if (any) break;
  }
  const int32_t r = route(q);
  mask_.clear();
  return r;
}

void Cluster::place_arrival(int32_t i, sim::SessionState s, RouteRequest& q) {
  const SplitConfig& sp = d_->cfg.split;
  bool to_prefill = sp.mode == "always";
  int64_t uncached = q.context_tokens;
  if (!to_prefill) {
    // llm-d's rule: prefill remotely when the tokens no local replica has cached exceed it.
    View v(*this, q);
    int64_t best = 0;
    for (int32_t r = 0; r < size(); ++r)
      if (!in_pool(d_->roles[static_cast<size_t>(r)], kPrefillPool))
        best = std::max(best, engine(r).view().cached_prefix_blocks(v.prefix_chain(r)) *
                                  engine(r).view().block_tokens());
    uncached = std::max<int64_t>(q.context_tokens - best, 0);
    to_prefill = uncached > sp.threshold_tokens;
  }
  const int32_t r = route_in(q, to_prefill ? kPrefillPool : kLocalPool);
  if (to_prefill) {
    ++d_->window.prefill_requests;
    d_->window.prefill_tokens += uncached;
  }
  ++admitted_[static_cast<size_t>(r)];
  touch(r);
  s.export_after_prefill = d_->roles[static_cast<size_t>(r)] == Role::kPrefill;
  ledger_.placed(i, r, replica(r).admit(std::move(s)));
}

bool Cluster::place_resume(int32_t i, RouteRequest& q, double duration_s, sim::Nanos ended_at) {
  const Location at = ledger_.where(i);
  sim::Engine& holder = replica(at.replica);
  const SplitConfig& sp = d_->cfg.split;
  const int64_t uncached = std::max<int64_t>(q.context_tokens - q.holder_kv_tokens, 0);
  const bool to_prefill = sp.mode == "always" || uncached > sp.threshold_tokens;
  const auto hr = static_cast<size_t>(at.replica);
  int32_t r = at.replica;
  // Served locally, a turn stays with the KV its holder kept, unless the holder drains.
  if (to_prefill || in_pool(d_->roles[hr], kPrefillPool) || d_->draining[hr])
    r = route_in(q, to_prefill ? kPrefillPool : kLocalPool);
  if (to_prefill) {
    ++d_->window.prefill_requests;
    d_->window.prefill_tokens += uncached;
  }
  const bool exports = d_->roles[static_cast<size_t>(r)] == Role::kPrefill;
  ++resumed_[static_cast<size_t>(r)];
  touch(r);
  // KV the tiers hold comes back (or is given up) as in a fleet without roles.
  if (t_ && resume_with_tiers(q, r, duration_s, ended_at)) return true;
  if (r == at.replica) {
    holder.handoff().set_export(at.handle, exports);
    holder.resume(at.handle, duration_s, ended_at);
    return true;
  }
  sim::SessionState moved = holder.handoff().export_paused(at.handle, sim::LostCause::kMigration);
  touch(at.replica);
  ++moved.m.migrations;
  ++migrations_;
  moved.export_after_prefill = exports;
  ledger_.placed(i, r, replica(r).admit_resumed(std::move(moved), duration_s, ended_at));
  return true;
}

void Cluster::resume_on(int32_t r, int32_t h, double intercept_s, sim::Nanos ended_at) {
  if (d_) replica(r).handoff().set_export(h, d_->roles[static_cast<size_t>(r)] == Role::kPrefill);
  replica(r).resume(h, intercept_s, ended_at);
}

void Cluster::prefilled(int32_t replica_index, int32_t handle, const sim::SessionState& s,
                        sim::Nanos iteration_start) {
  if (!d_) throw std::logic_error("Cluster: an export in a fleet without roles");
  RouteRequest q;
  q.session = s.idx;
  q.context_tokens = s.context;
  q.kv_arrives = true;
  const int32_t dst = route_in(q, kLocalPool);
  d_->imports[static_cast<size_t>(dst)].push_back(
      {s.idx, replica_index, handle, now(), iteration_start});
}

void Cluster::pump_imports() {
  bool changed = true;
  while (changed) {
    changed = false;
    for (int32_t r = 0; r < size(); ++r) {
      auto& q = d_->imports[static_cast<size_t>(r)];
      const auto rs = static_cast<size_t>(r);
      if (!q.empty() && (!in_pool(d_->roles[rs], kLocalPool) || d_->draining[rs])) {
        // Its replica no longer decodes: the KV goes elsewhere.
        std::deque<PendingImport> moved, stay;
        moved.swap(q);
        for (const PendingImport& p : moved) {
          RouteRequest rq;
          rq.session = p.session;
          rq.context_tokens = engine(p.src).view().session(p.src_h).context;
          rq.kv_arrives = true;
          const int32_t to = route_in(rq, kLocalPool);
          (to == r ? stay : d_->imports[static_cast<size_t>(to)]).push_back(p);
          changed = changed || to != r;
        }
        q.swap(stay);
        if (changed) continue;
      }
      while (!q.empty()) {
        const PendingImport p = q.front();
        const sim::Engine& e = engine(r);
        if (p.src == r) {
          replica(r).handoff().keep_exported(p.src_h);
          touch(r);
        } else {
          const int64_t kv = engine(p.src).view().session(p.src_h).kv;
          if (!e.handoff().can_import(kv)) {
            // Nothing here will free blocks by itself: give up idle KV for it.
            if (e.busy() || !e.view().running().empty() || !e.view().queues().importing().empty() ||
                !replica(r).handoff().make_room(sim::blocks_for(kv, e.view().block_tokens())))
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

int32_t Cluster::link_index(int32_t src, int32_t dst) const {
  const int32_t per_node = d_->cfg.links.replicas_per_node;
  return 2 * src + (src / per_node != dst / per_node ? 1 : 0);
}

void Cluster::start_transfer(int32_t dst, const PendingImport& p) {
  sim::Engine& src = replica(p.src);
  const double bytes = kv_bytes(src, src.view().session(p.src_h).kv);
  const LinksConfig& lc = d_->cfg.links;
  const Link& link = d_->links[link_index(p.src, dst)];
  double send = bytes;
  if (lc.transfer == "layer" && now() == p.prefilled_at) {
    // Streamed layer by layer during the last prefill iteration: what the link could carry
    // meanwhile has gone, but never the last layer, which exists only at the iteration's end.
    const int layers = std::max(1, src.view().cost_model().profile().model.layers);
    const double carried = static_cast<double>(p.prefilled_at - p.iteration_start) *
                           link.spec().gbps;
    send = std::max(bytes / layers, bytes - carried);
  }
  launch(dst, send, Transfer{p.session, p.src, p.src_h, dst, -1, p.prefilled_at, now(), bytes});
  d_->wait_s_sum += sim::to_seconds(now() - p.prefilled_at);
  d_->stats.transfer_bytes += bytes;
}

// Reserves the destination's blocks for t's session and starts sending `send_bytes` of it.
void Cluster::launch(int32_t dst, double send_bytes, Transfer t) {
  sim::SessionState copy = engine(t.src).view().session(t.src_h);
  copy.gpu_blocks.clear();
  copy.cpu_blocks.clear();
  copy.h = -1;
  t.dst_h = replica(dst).handoff().reserve_import(std::move(copy));
  const int32_t li = link_index(t.src, dst);
  const int64_t id = d_->links[li].start(now(), send_bytes);
  d_->transfers[{li, id}] = t;
  schedule_link(li);
  touch(dst);
}

// The decode (or mixed) replica, other than src and not leaving the role, with the most free
// blocks that can take `kv` tokens now; ties go to the lowest index. -1: none.
int32_t Cluster::move_target(int32_t src, int64_t kv) {
  int32_t best = -1;
  int64_t most = -1;
  for (int32_t r = 0; r < size(); ++r) {
    const auto i = static_cast<size_t>(r);
    if (r == src || d_->draining[i] || !in_pool(d_->roles[i], kLocalPool) ||
        !in_pool(d_->switch_to[i], kLocalPool) || !engine(r).handoff().can_import(kv))
      continue;
    if (engine(r).view().gpu().free() > most) {
      most = engine(r).view().gpu().free();
      best = r;
    }
  }
  return best;
}

void Cluster::relocate_paused(int32_t r, int32_t h) {
  sim::Engine& e = replica(r);
  const sim::SessionState& s = e.view().session(h);
  if (s.kv == 0) return;
  if (d_->cfg.switching.paused_kv == "drop") {
    d_->stats.switch_dropped_tokens += s.kv;
    e.handoff().drop_paused(h, sim::LostCause::kRoleSwitch);
    touch(r);
    return;
  }
  const int32_t dst = e.handoff().can_move_paused(h) ? move_target(r, s.kv) : -1;
  if (dst < 0) {
    // No decode replica has room (or the KV is on the CPU): it stays, and the engine evicts it
    // if it needs the blocks.
    d_->stats.switch_kept_tokens += s.kv;
    return;
  }
  e.handoff().start_move(h);
  const double bytes = kv_bytes(e, s.kv);
  launch(dst, bytes, Transfer{s.idx, r, h, dst, -1, now(), now(), bytes, true});
}

void Cluster::settle_strays() {
  if (d_->stray_paused.empty()) return;
  std::vector<std::array<int32_t, 3>> strays;
  strays.swap(d_->stray_paused);
  for (const auto& [r, h, idx] : strays) {
    const sim::SessionState& s = engine(r).view().session(h);
    // Still paused here, and here still not decoding.
    if (s.idx == idx && s.phase == sim::Phase::kPaused &&
        d_->roles[static_cast<size_t>(r)] == Role::kPrefill)
      relocate_paused(r, h);
  }
}

void Cluster::schedule_link(int32_t li) {
  d_->links.schedule(queue_, kEvLink, li);
}

void Cluster::on_link(int32_t li) {
  for (int64_t id : d_->links.fire(li, now())) {
    auto node = d_->transfers.extract({li, id});
    const Transfer& t = node.mapped();
    const int64_t kv = replica(t.src).handoff().finish_export(t.src_h).kv;
    replica(t.dst).handoff().finish_import(t.dst_h, now() - t.prefilled_at);
    ledger_.placed(t.session, t.dst, t.dst_h);
    touch(t.src);
    touch(t.dst);
    if (t.paused_move) {
      ++d_->stats.switch_moves;
      d_->stats.switch_moved_tokens += kv;
      auto r = d_->resume_on_landing.find(t.session);
      if (r != d_->resume_on_landing.end()) {
        const sim::Nanos ended_at = r->second;
        d_->resume_on_landing.erase(r);
        resume_session(t.session, ended_at);
      }
      continue;
    }
    ++d_->stats.transfers;
    d_->transfer_s_sum += sim::to_seconds(now() - t.started_at);
  }
  schedule_link(li);
}

void Cluster::check_transfers(std::vector<int32_t>& seen, size_t tier_importing) const {
  auto fail = [](const std::string& m) { throw std::logic_error("global invariant: " + m); };
  size_t importing = 0;
  for (const auto& e : engines_) importing += e->view().queues().importing().size();
  importing -= std::min(importing, tier_importing);  // KV fetches (cluster_fetch.cpp)
  if (importing != d_->transfers.size())
    fail(fmt::format("{} sessions import KV but {} transfers are in flight", importing,
                     d_->transfers.size()));
  for (const auto& [key, t] : d_->transfers) {
    const sim::SessionState& a = engines_[static_cast<size_t>(t.src)]->view().session(t.src_h);
    const sim::SessionState& b = engines_[static_cast<size_t>(t.dst)]->view().session(t.dst_h);
    if (a.idx != t.session || a.phase != sim::Phase::kExporting || b.idx != t.session ||
        b.phase != sim::Phase::kImporting || a.kv != b.kv)
      fail(fmt::format("session {}: its transfer from replica {} to {} lost an end", t.session,
                       t.src, t.dst));
    if (seen[static_cast<size_t>(t.session)] != 2)
      fail(fmt::format("session {} in flight is on {} replicas", t.session,
                       seen[static_cast<size_t>(t.session)]));
    seen[static_cast<size_t>(t.session)] = 1;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i] > 1) fail(fmt::format("session {} is on two replicas", i));
}

}  // namespace isim::cluster
