// Where a resumed session's KV comes from when its replica's manager uses the fleet's tiers:
// its holder's GPU, another replica's GPU (a peer fetch over NVLink or the network), its node's
// CPU tier or the pool, by Mooncake's rule (cluster/kv_tiers.h); and the global checks of the
// copies in flight.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/cluster.h"
#include "cluster/tier_state.h"
#include "sim/block_manager.h"

namespace isim::cluster {

FetchPlan Cluster::plan_fetch(const RouteRequest& q, int32_t r) const {
  const Location at = ledger_.where(q.session);
  const sim::Engine& holder = *engines_[static_cast<size_t>(at.replica)];
  const sim::SessionState& s = holder.view().session(at.handle);
  const trace::Session& src = trace_[static_cast<size_t>(q.session)];
  const trace::Segment& next = src.segments[static_cast<size_t>(s.segments_done()) + 1];
  const bool reset = next.event.kind == trace::ContextEventKind::kReset;
  auto usable = [&](int64_t kv) { return next.kv_surviving(kv); };
  const sim::Engine& dst = *engines_[static_cast<size_t>(r)];
  const int64_t total = q.context_tokens, need = total - next.input;
  const int64_t chunk = dst.view().config().max_num_batched_tokens;
  FetchPlan p;
  if (r == at.replica) {
    p.tokens = usable(s.kv);
  } else if (s.chain_block_tokens == dst.view().block_tokens() && !reset) {
    p.tokens = std::min(dst.view().cached_prefix_blocks(s.chain) * dst.view().block_tokens(), need);
  }
  auto prefill = [&](int64_t kv) {
    auto& memo = t_->prefill_memo;
    if (memo.size() > 100000) memo.clear();
    const auto key = std::make_tuple(&dst.view().cost_model(), kv, total - kv, chunk);
    auto it = memo.find(key);
    if (it == memo.end()) {
      auto& est = t_->estimators[&dst.view().cost_model()];
      if (!est) est = std::make_unique<sim::CostModel>(dst.view().cost_model().profile());
      it = memo.emplace(key, prefill_estimate(*est, kv, total - kv, chunk)).first;
    }
    return it->second;
  };
  const int64_t local = p.tokens;
  sim::Nanos local_cost = -1;  // computed when a source is worth pricing
  auto consider = [&](FetchPlan::Source from, int64_t remote, const LinkSpec& link) {
    if (remote - local < std::max<int64_t>(t_->cfg.fetch_threshold_tokens, 1)) return;
    if (local_cost < 0) local_cost = p.cost = prefill(local);
    FetchCase c{local, remote, transfer_estimate(link, kv_bytes(dst, remote)), local_cost,
                prefill(remote)};
    const sim::Nanos cost = c.transfer + c.prefill_remote;
    if (fetch_pays(c, t_->cfg.fetch_threshold_tokens) && cost < p.cost) p = {from, remote, cost};
  };
  if (r != at.replica && s.kv > 0 && holder.handoff().can_move_paused(at.handle)) {
    const bool same_node = r / t_->per_node == at.replica / t_->per_node;
    consider(FetchPlan::kPeer, usable(s.kv), same_node ? t_->nvlink : t_->network);
  }
  if (s.kv == 0) {
    auto entry = [&](const TierStore& st) -> const TierEntry* {
      const TierEntry* e = st.find(q.session);
      return e && e->ready <= now() && e->generation == s.generation ? e : nullptr;
    };
    if (const TierEntry* e = entry(t_->nodes[static_cast<size_t>(r / t_->per_node)]))
      consider(FetchPlan::kNodeCpu, usable(e->tokens), t_->cfg.node_cpu.link);
    if (const TierEntry* e = entry(t_->pool))
      consider(FetchPlan::kPool, usable(e->tokens), t_->cfg.pool.link);
  }
  return p;
}

int64_t Cluster::reachable_kv(const RouteRequest& q, int32_t r) const {
  if (!q.resume) return 0;
  if (!t_) return r == q.holder ? q.holder_kv_tokens : 0;
  return plan_fetch(q, r).tokens;
}

bool Cluster::resume_with_tiers(const RouteRequest& q, int32_t r, double intercept_s,
                                sim::Nanos ended_at) {
  const Location at = ledger_.where(q.session);
  const sim::SessionState& s = engine(at.replica).view().session(at.handle);
  TierStats& st = t_->stats;
  ++st.lookups;
  if (r == at.replica && s.kv > 0) {
    ++st.hits[kHitGpu];
    return false;
  }
  const FetchPlan p = plan_fetch(q, r);
  if (ended_at < 0) ended_at = now();
  const trace::Segment& next =
      trace_[static_cast<size_t>(q.session)].segments[static_cast<size_t>(s.segments_done()) + 1];
  auto usable = [&](int64_t kv) { return next.kv_surviving(kv); };
  if (p.source == FetchPlan::kPeer) {
    if (fetch_peer(q, r, p, intercept_s, ended_at)) return true;
    // No room there now: it resumes on its holder, with its KV.
    ++st.hits[kHitGpu];
    resume_on(at.replica, at.handle, intercept_s, ended_at);
    touch(at.replica);
    return true;
  } else if (p.source != FetchPlan::kNone) {
    fetch_tier(q, r, p, intercept_s, ended_at);
    return true;
  }
  // Nothing fetched: what a tier held beyond r's own KV is given up, and the holder's KV is
  // dropped if the session runs elsewhere (the migration below).
  for (TierStore* store : {&t_->nodes[static_cast<size_t>(at.replica / t_->per_node)], &t_->pool})
    if (store->find(q.session)) {
      // What r holds itself (its prefix cache) was not lost.
      const int64_t kept = usable(store->take(q.session).tokens);
      st.lost_tokens[kLostDeclined] += std::max<int64_t>(kept - p.tokens, 0);
    }
  if (r != at.replica) st.lost_tokens[kLostGpu] += std::max<int64_t>(usable(s.kv) - p.tokens, 0);
  ++st.hits[p.tokens > 0 ? kHitGpu : kHitMiss];
  return false;
}

bool Cluster::fetch_peer(const RouteRequest& q, int32_t r, const FetchPlan& p,
                         double intercept_s, sim::Nanos ended_at) {
  const Location at = ledger_.where(q.session);
  sim::Engine& holder = replica(at.replica);
  sim::Engine& dst = replica(r);
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
  ++migrations_;
  TierCopy c = fetch_copy(TierCopy::kFetchPeer, q.session, r,
                          dst.handoff().reserve_import(std::move(copy)), ended_at, intercept_s, kv);
  c.src = at.replica;
  c.src_h = at.handle;
  const bool same_node = r / t_->per_node == at.replica / t_->per_node;
  start_copy(3 * at.replica + (same_node ? 1 : 2), kv_bytes(dst, kv), c);
  ++t_->stats.hits[kHitPeerGpu];
  ++t_->stats.fetches[0];
  t_->stats.fetched_tokens[0] += p.tokens;
  touch(r);
  touch(at.replica);
  return true;
}

void Cluster::fetch_tier(const RouteRequest& q, int32_t r, const FetchPlan& p,
                         double intercept_s, sim::Nanos ended_at) {
  const bool cpu = p.source == FetchPlan::kNodeCpu;
  TierStore& store = cpu ? t_->nodes[static_cast<size_t>(r / t_->per_node)] : t_->pool;
  // The entry leaves its tier now (a reset's discarded tail is worthless, not lost), so the
  // evictions that make room for it cannot give it up.
  store.take(q.session);
  PendingFetch f{q.session, r, store.kind(), p.tokens, intercept_s, ended_at};
  const size_t k = cpu ? 1 : 2;
  ++t_->stats.hits[cpu ? kHitNodeCpu : kHitPool];
  ++t_->stats.fetches[k];
  t_->stats.fetched_tokens[k] += p.tokens;
  if (!start_fetch(f)) t_->pending.push_back(f);
}

// Starts a tier fetch when its destination has room (evicting idle KV if needed).
bool Cluster::start_fetch(const PendingFetch& f) {
  sim::Engine& dst = replica(f.dst);
  if (!dst.handoff().can_import(f.tokens) &&
      !dst.handoff().make_room(sim::blocks_for(f.tokens, dst.view().block_tokens())))
    return false;
  const Location at = ledger_.where(f.session);
  sim::SessionState moved =
      replica(at.replica).handoff().export_paused(at.handle, sim::LostCause::kMigration);
  touch(at.replica);
  touch(f.dst);
  if (f.dst != at.replica) {
    ++moved.m.migrations;
    ++migrations_;
  }
  TierCopy c = fetch_copy(TierCopy::kFetchTier, f.session, f.dst,
                          dst.handoff().reserve_fetch(std::move(moved), f.tokens), f.ended_at,
                          f.intercept_s, f.tokens);
  c.tier = f.tier;
  ledger_.placed(f.session, f.dst, c.dst_h);
  const bool cpu = f.tier == TierKind::kNodeCpu;
  start_copy(3 * f.dst + (cpu ? 0 : 2), kv_bytes(dst, f.tokens), c);
  return true;
}

// Tier fetches waiting for room, in the order they were asked.
void Cluster::pump_fetches() {
  if (t_->pending.empty()) return;
  std::deque<PendingFetch> left;
  while (!t_->pending.empty()) {
    const PendingFetch f = t_->pending.front();
    t_->pending.pop_front();
    if (!start_fetch(f)) left.push_back(f);
  }
  t_->pending.swap(left);
}

void Cluster::check_tier_copies(std::vector<int32_t>& seen, size_t& importing) const {
  auto fail = [](const std::string& m) { throw std::logic_error("global invariant: " + m); };
  for (const auto& [key, c] : t_->copies) {
    if (c.kind == TierCopy::kDemote) continue;
    ++importing;
    const sim::SessionState& b = engines_[static_cast<size_t>(c.dst)]->view().session(c.dst_h);
    if (b.idx != c.session || b.phase != sim::Phase::kImporting || b.kv != c.tokens)
      fail(fmt::format("session {}: its KV fetch to replica {} lost its end", c.session, c.dst));
    const int32_t want = c.kind == TierCopy::kFetchPeer ? 2 : 1;
    if (c.kind == TierCopy::kFetchPeer) {
      const sim::SessionState& a = engines_[static_cast<size_t>(c.src)]->view().session(c.src_h);
      if (a.idx != c.session || a.phase != sim::Phase::kExporting || a.kv != c.tokens)
        fail(fmt::format("session {}: its KV fetch from replica {} lost its source", c.session,
                         c.src));
    } else if (ledger_.where(c.session).replica != c.dst) {
      fail(fmt::format("session {} fetches KV to replica {}, the ledger says {}", c.session,
                       c.dst, ledger_.where(c.session).replica));
    }
    if (seen[static_cast<size_t>(c.session)] != want)
      fail(fmt::format("session {} fetching KV is on {} replicas", c.session,
                       seen[static_cast<size_t>(c.session)]));
    seen[static_cast<size_t>(c.session)] = 1;
  }
  // An entry's session waits, paused and holding no KV, on a replica.
  auto check_store = [&](const TierStore& st) {
    for (const auto& [idx, e] : st.entries()) {
      if (ledger_.status(idx) != Status::kOnReplica)
        fail(fmt::format("session {} has KV in {} but is on no replica", idx, tier_name(st.kind())));
      const Location at = ledger_.where(idx);
      const sim::SessionState& s =
          engines_[static_cast<size_t>(at.replica)]->view().session(at.handle);
      if (s.phase != sim::Phase::kPaused || s.kv != 0)
        fail(fmt::format("session {} has KV in {} and also holds {} tokens", idx,
                         tier_name(st.kind()), s.kv));
    }
    if (st.used() > st.capacity() * (1 + 1e-12))
      fail(fmt::format("{} holds more than its capacity", tier_name(st.kind())));
  };
  for (const TierStore& n : t_->nodes) check_store(n);
  check_store(t_->pool);
}

void Cluster::fill_tiers(RunResult& out) const {
  if (!t_) return;
  out.tiers = t_->stats;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  for (const TierStore& n : t_->nodes) out.tiers.peak_gib[0] = std::max(out.tiers.peak_gib[0], n.peak() / kGiB);
  out.tiers.peak_gib[1] = t_->pool.peak() / kGiB;
  const int64_t fetches = t_->stats.fetches[0] + t_->stats.fetches[1] + t_->stats.fetches[2];
  out.tiers.fetch_s_mean = fetches > 0 ? t_->fetch_s_sum / static_cast<double>(fetches) : 0;
}

}  // namespace isim::cluster
