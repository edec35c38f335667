// Where a resumed session's KV comes from when its replica's manager uses the fleet's tiers
// (cluster/tiers.h): its holder's GPU, another replica's GPU (a peer fetch over NVLink or the
// network), its node's CPU tier or the pool, by Mooncake's rule (cluster/kv_tiers.h).
#include <algorithm>
#include <stdexcept>

#include "cluster/intercepts.h"
#include "cluster/tiers.h"
#include "sim/block_manager.h"

namespace isim::cluster {

sim::Nanos Tiers::prefill_cost(const sim::Engine& dst, int64_t kv, int64_t total) const {
  const int64_t chunk = dst.view().config().max_num_batched_tokens;
  if (prefill_memo_.size() > 100000) prefill_memo_.clear();
  const auto key = std::make_tuple(&dst.view().cost_model(), kv, total - kv, chunk);
  auto it = prefill_memo_.find(key);
  if (it == prefill_memo_.end()) {
    auto& est = estimators_[&dst.view().cost_model()];
    if (!est) est = std::make_unique<sim::CostModel>(dst.view().cost_model().profile());
    it = prefill_memo_.emplace(key, prefill_estimate(*est, kv, total - kv, chunk)).first;
  }
  return it->second;
}

FetchPlan Tiers::plan_fetch(const RouteRequest& q, int32_t r) const {
  const Location at = f_.ledger().where(q.session);
  const sim::Engine& holder = f_.engine(at.replica);
  const sim::SessionState& s = holder.view().session(at.handle);
  const trace::Session& src = f_.source(q.session);
  const trace::Segment& next = src.segments[static_cast<size_t>(s.segments_done()) + 1];
  const bool reset = next.event.kind == trace::ContextEventKind::kReset;
  auto usable = [&](int64_t kv) { return next.kv_surviving(kv); };
  const sim::Engine& dst = f_.engine(r);
  const int64_t total = q.context_tokens, need = total - next.input;
  FetchPlan p;
  if (r == at.replica) {
    p.tokens = usable(s.kv);
  } else if (s.chain_block_tokens == dst.view().block_tokens() && !reset) {
    p.tokens = std::min(dst.view().cached_prefix_blocks(s.chain) * dst.view().block_tokens(), need);
  }
  const int64_t local = p.tokens;
  sim::Nanos local_cost = -1;  // computed when a source is worth pricing
  auto consider = [&](FetchPlan::Source from, int64_t remote, const LinkSpec& link) {
    if (remote - local < std::max<int64_t>(cfg_.fetch_threshold_tokens, 1)) return;
    if (local_cost < 0) local_cost = p.cost = prefill_cost(dst, local, total);
    FetchCase c{local, remote, transfer_estimate(link, kv_bytes(dst, remote)), local_cost,
                prefill_cost(dst, remote, total)};
    const sim::Nanos cost = c.transfer + c.prefill_remote;
    if (fetch_pays(c, cfg_.fetch_threshold_tokens) && cost < p.cost) p = {from, remote, cost};
  };
  if (r != at.replica && s.kv > 0 && holder.handoff().can_move_paused(at.handle)) {
    const bool same_node = r / per_node_ == at.replica / per_node_;
    consider(FetchPlan::kPeer, usable(s.kv), same_node ? nvlink_ : network_);
  }
  if (s.kv == 0) {
    auto entry = [&](const TierStore& st) -> const TierEntry* {
      const TierEntry* e = st.find(q.session);
      return e && e->ready <= f_.now() && e->generation == s.generation ? e : nullptr;
    };
    if (const TierEntry* e = entry(nodes_[static_cast<size_t>(r / per_node_)]))
      consider(FetchPlan::kNodeCpu, usable(e->tokens), cfg_.node_cpu.link);
    if (const TierEntry* e = entry(pool_))
      consider(FetchPlan::kPool, usable(e->tokens), cfg_.pool.link);
  }
  return p;
}

bool Tiers::resume_with_tiers(const RouteRequest& q, int32_t r, double intercept_s,
                              sim::Nanos ended_at) {
  const Location at = f_.ledger().where(q.session);
  const sim::SessionState& s = f_.engine(at.replica).view().session(at.handle);
  TierStats& st = stats_;
  ++st.lookups;
  if (prefetched_.count(q.session)) prefetch_settled(q.session, r == at.replica && s.kv > 0);
  if (r == at.replica && s.kv > 0) {
    ++st.hits[kHitGpu];
    return false;
  }
  const FetchPlan p = plan_fetch(q, r);
  if (ended_at < 0) ended_at = f_.now();
  const trace::Segment& next =
      f_.source(q.session).segments[static_cast<size_t>(s.segments_done()) + 1];
  auto usable = [&](int64_t kv) { return next.kv_surviving(kv); };
  if (p.source == FetchPlan::kPeer) {
    if (fetch_peer(q, r, p, intercept_s, ended_at)) return true;
    // No room there now: it resumes on its holder, with its KV.
    ++st.hits[kHitGpu];
    f_.parts().intercepts->resume_on(at.replica, at.handle, intercept_s, ended_at);
    f_.touch(at.replica);
    return true;
  } else if (p.source != FetchPlan::kNone) {
    fetch_tier(q, r, p, intercept_s, ended_at);
    return true;
  }
  // Nothing fetched: what a tier held beyond r's own KV is given up, and the holder's KV is
  // dropped if the session runs elsewhere (the migration below).
  for (TierStore* store : {&node_of(at.replica), &pool_})
    if (store->find(q.session)) {
      // What r holds itself (its prefix cache) was not lost.
      const int64_t kept = usable(store->take(q.session).tokens);
      st.lost_tokens[kLostDeclined] += std::max<int64_t>(kept - p.tokens, 0);
    }
  if (r != at.replica) st.lost_tokens[kLostGpu] += std::max<int64_t>(usable(s.kv) - p.tokens, 0);
  ++st.hits[p.tokens > 0 ? kHitGpu : kHitMiss];
  return false;
}

bool Tiers::fetch_peer(const RouteRequest& q, int32_t r, const FetchPlan& p, double intercept_s,
                       sim::Nanos ended_at) {
  const Location at = f_.ledger().where(q.session);
  sim::Engine& holder = f_.replica(at.replica);
  sim::Engine& dst = f_.replica(r);
  const int64_t kv = holder.view().session(at.handle).kv;
  if (!dst.handoff().can_import(kv) &&
      !dst.handoff().make_room(sim::blocks_for(kv, dst.view().block_tokens())))
    return false;
  holder.handoff().start_move(at.handle);
  sim::SessionState copy = holder.view().session(at.handle);
  copy.gpu_blocks.clear();
  copy.cpu_blocks.clear();
  copy.h = -1;
  ++copy.m.migrations;
  ++f_.counts().migrations;
  KvMove c;
  c.kind = KvMove::kFetchPeer;
  c.session = q.session;
  c.dst = r;
  c.dst_h = dst.handoff().reserve_import(std::move(copy));
  c.since = ended_at;
  c.intercept_s = intercept_s;
  c.tokens = kv;
  c.src = at.replica;
  c.src_h = at.handle;
  const bool same_node = r / per_node_ == at.replica / per_node_;
  start_copy(at.replica, same_node ? 1 : 2, kv_bytes(dst, kv), c);
  ++stats_.hits[kHitPeerGpu];
  ++stats_.fetches[0];
  stats_.fetched_tokens[0] += p.tokens;
  f_.touch(r);
  f_.touch(at.replica);
  return true;
}

void Tiers::fetch_tier(const RouteRequest& q, int32_t r, const FetchPlan& p, double intercept_s,
                       sim::Nanos ended_at) {
  const bool cpu = p.source == FetchPlan::kNodeCpu;
  TierStore& store = cpu ? node_of(r) : pool_;
  // The entry leaves its tier now (a reset's discarded tail is worthless, not lost), so the
  // evictions that make room for it cannot give it up.
  store.take(q.session);
  PendingFetch f{q.session, r, store.kind(), p.tokens, intercept_s, ended_at};
  const size_t k = cpu ? 1 : 2;
  ++stats_.hits[cpu ? kHitNodeCpu : kHitPool];
  ++stats_.fetches[k];
  stats_.fetched_tokens[k] += p.tokens;
  if (!start_fetch(f)) pending_.push_back(f);
}

// Starts a tier fetch when its destination has room (evicting idle KV if needed).
bool Tiers::start_fetch(const PendingFetch& f) {
  sim::Engine& dst = f_.replica(f.dst);
  if (!dst.handoff().can_import(f.tokens) &&
      !dst.handoff().make_room(sim::blocks_for(f.tokens, dst.view().block_tokens())))
    return false;
  const Location at = f_.ledger().where(f.session);
  sim::SessionState moved =
      f_.replica(at.replica).handoff().export_paused(at.handle, sim::LostCause::kMigration);
  f_.touch(at.replica);
  f_.touch(f.dst);
  if (f.dst != at.replica) {
    ++moved.m.migrations;
    ++f_.counts().migrations;
  }
  KvMove c;
  c.kind = KvMove::kFetchTier;
  c.session = f.session;
  c.dst = f.dst;
  c.dst_h = dst.handoff().reserve_fetch(std::move(moved), f.tokens);
  c.since = f.ended_at;
  c.intercept_s = f.intercept_s;
  c.tokens = f.tokens;
  c.tier = f.tier;
  f_.ledger().placed(f.session, f.dst, c.dst_h);
  start_copy(f.dst, f.tier == TierKind::kNodeCpu ? 0 : 2, kv_bytes(dst, f.tokens), c);
  return true;
}

// Tier fetches waiting for room, in the order they were asked.
void Tiers::pump_fetches() {
  if (pending_.empty()) return;
  std::deque<PendingFetch> left;
  while (!pending_.empty()) {
    const PendingFetch f = pending_.front();
    pending_.pop_front();
    if (!start_fetch(f)) left.push_back(f);
  }
  pending_.swap(left);
}

}  // namespace isim::cluster
