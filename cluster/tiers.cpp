// The fleet's KV tiers in a run (cluster/tiers.h): an idle eviction demotes a paused session's
// KV to its node's CPU tier or the pool (as its replica's KV manager says), copies land, and
// the stores' global check and results. Fetches are in tier_fetch.cpp.
#include "cluster/tiers.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cluster/intercepts.h"

namespace isim::cluster {

bool Tiers::used(const Fleet& f) {
  bool any = false;
  for (int32_t r = 0; r < f.size(); ++r) any = any || f.engine(r).kv_manager().uses_tiers();
  return any;
}

Tiers::Tiers(Fleet& f, const KvTiersConfig& cfg, const LinksConfig& links)
    : f_(f),
      cfg_(cfg),
      per_node_(links.replicas_per_node),
      nvlink_(links.intra_node),
      network_(links.inter_node) {
  const int32_t nodes = (f.size() + per_node_ - 1) / per_node_;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  for (int32_t n = 0; n < nodes; ++n)
    nodes_.emplace_back(TierKind::kNodeCpu, cfg.node_cpu.capacity_gib * kGiB);
  pool_ = TierStore(TierKind::kPool, cfg.pool.capacity_gib * kGiB);
  Transfers& t = *f.parts().transfers;
  for (int32_t r = 0; r < f.size(); ++r) {
    const int32_t li = t.add(cfg.node_cpu.link);
    if (r == 0) link0_ = li;
    t.add(nvlink_);
    t.add(cfg.pool.link);
  }
  stats_.enabled = true;
  set_up_prices_and_prefetch();
}

void Tiers::evicting(int32_t r, const sim::SessionState& s) {
  if (prefetched_.count(s.idx)) prefetch_settled(s.idx, false);  // evicted again before use
  const sim::KvManager& m = f_.engine(r).kv_manager();
  const bool cpu = node_of(r).present();
  const bool pool = pool_.present();
  const sim::Demote to = m.uses_tiers() ? m.demote_to(s, f_.now(), cpu, pool) : sim::Demote::kDrop;
  if (to == sim::Demote::kDrop) {
    stats_.lost_tokens[kLostGpu] += s.kv;
    return;
  }
  demote(r, s, to);
}

void Tiers::demote(int32_t r, const sim::SessionState& s, sim::Demote to) {
  const bool to_cpu = to == sim::Demote::kNodeCpu;
  TierStore& store = to_cpu ? node_of(r) : pool_;
  TierEntry e{s.idx, s.kv, kv_bytes(f_.engine(r), s.kv), f_.now(), sim::kForever, s.generation};
  if (e.bytes > store.capacity()) {
    stats_.lost_tokens[kLostGpu] += s.kv;
    return;
  }
  store_entry(store, e, f_.engine(r).kv_manager());
  const int k = to_cpu ? 0 : 1;
  ++stats_.demotions[static_cast<size_t>(k)];
  stats_.demoted_tokens[static_cast<size_t>(k)] += s.kv;
  KvMove c;
  c.kind = KvMove::kDemote;
  c.session = s.idx;
  c.tier = store.kind();
  c.node = r / per_node_;
  c.written = e.written;
  c.tokens = s.kv;
  start_copy(r, to_cpu ? 0 : 2, e.bytes, c);
}

// Puts e into `store`, giving up entries in the manager's eviction order; a node's CPU tier
// sends what it gives up down to the pool when there is one.
void Tiers::store_entry(TierStore& store, const TierEntry& e, const sim::KvManager& m) {
  auto first_to_go = [this, &m](const TierEntry& a, const TierEntry& b) {
    const Location la = f_.ledger().where(a.session), lb = f_.ledger().where(b.session);
    const sim::SessionState& sa = f_.engine(la.replica).view().session(la.handle);
    const sim::SessionState& sb = f_.engine(lb.replica).view().session(lb.handle);
    if (m.evict_before(sa, sb, f_.now())) return true;
    return !m.evict_before(sb, sa, f_.now()) && a.session > b.session;
  };
  bool fits = false;
  const std::vector<TierEntry> gone = store.make_room(e.bytes, fits, first_to_go);
  store.put(e);
  const bool cascade = store.kind() == TierKind::kNodeCpu && pool_.present();
  for (TierEntry g : gone) {
    if (!cascade || g.bytes > pool_.capacity()) {
      stats_.lost_tokens[store.kind() == TierKind::kNodeCpu ? kLostNodeCpu : kLostPool] += g.tokens;
      continue;
    }
    // Host to pool: not on a GPU's link; it lands a lone transfer's time after both ends have
    // the data.
    g.ready = std::max(g.ready == sim::kForever ? f_.now() : g.ready, f_.now()) +
              transfer_estimate(cfg_.pool.link, g.bytes);
    stats_.link_bytes[kLinkCascade] += g.bytes;
    f_.parts().transfers->account(cfg_.pool.link.kind, g.bytes);
    store_entry(pool_, g, m);
  }
}

void Tiers::start_copy(int32_t r, int k, double bytes, const KvMove& c) {
  stats_.link_bytes[k == 0 ? kLinkPcie : k == 1 ? kLinkNvlink : kLinkNetwork] += bytes;
  f_.parts().transfers->start(link0_ + 3 * r + k, bytes, c, *this);
}

void Tiers::landed(const KvMove& c) {
  if (c.kind == KvMove::kPrefetch) return prefetch_landed(c);
  if (c.kind == KvMove::kDemote) {
    TierStore& store = c.tier == TierKind::kNodeCpu ? nodes_[static_cast<size_t>(c.node)] : pool_;
    store.mark_ready(c.session, c.written, f_.now());
    return;
  }
  if (c.kind == KvMove::kFetchPeer) {
    f_.replica(c.src).handoff().finish_export(c.src_h);
    f_.touch(c.src);
  }
  sim::Engine& dst = f_.replica(c.dst);
  dst.handoff().finish_import(c.dst_h, 0);
  f_.ledger().placed(c.session, c.dst, c.dst_h);
  fetch_s_sum_ += sim::to_seconds(f_.now() - c.since);
  f_.parts().intercepts->resume_on(c.dst, c.dst_h, c.intercept_s, c.since);
  f_.touch(c.dst);
}

void Tiers::check() const {
  auto fail = [](const std::string& m) { throw std::logic_error("global invariant: " + m); };
  // An entry's session waits, paused and holding no KV, on a replica.
  auto check_store = [&](const TierStore& st) {
    for (const auto& [idx, e] : st.entries()) {
      if (f_.ledger().status(idx) != Status::kOnReplica)
        fail(
            fmt::format("session {} has KV in {} but is on no replica", idx, tier_name(st.kind())));
      const Location at = f_.ledger().where(idx);
      const sim::SessionState& s = f_.engine(at.replica).view().session(at.handle);
      if (s.phase != sim::Phase::kPaused || s.kv != 0)
        fail(fmt::format("session {} has KV in {} and also holds {} tokens", idx,
                         tier_name(st.kind()), s.kv));
    }
    if (st.used() > st.capacity() * (1 + 1e-12))
      fail(fmt::format("{} holds more than its capacity", tier_name(st.kind())));
  };
  for (const TierStore& n : nodes_) check_store(n);
  check_store(pool_);
}

void Tiers::fill(RunResult& out) const {
  out.tiers = stats_;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  for (const TierStore& n : nodes_)
    out.tiers.peak_gib[0] = std::max(out.tiers.peak_gib[0], n.peak() / kGiB);
  out.tiers.peak_gib[1] = pool_.peak() / kGiB;
  const int64_t fetches = stats_.fetches[0] + stats_.fetches[1] + stats_.fetches[2];
  out.tiers.fetch_s_mean = fetches > 0 ? fetch_s_sum_ / static_cast<double>(fetches) : 0;
  for (const auto& [i, bytes] : prefetched_) out.tiers.prefetch_wasted_bytes += bytes;  // unused
}

}  // namespace isim::cluster
