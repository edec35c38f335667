// The fleet's KV tiers in a run (cluster/kv_tiers.h): an idle eviction demotes a paused
// session's KV to its node's CPU tier or the pool (as its replica's KV manager says), and a
// resumed session's KV comes back from there, or from its holder's GPU when it resumes on
// another replica, when Mooncake's fetch rule says that beats recomputing it.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/cluster.h"
#include "cluster/tier_state.h"
#include "sim/block_manager.h"

namespace isim::cluster {

void Cluster::init_tiers(const KvTiersConfig& cfg, const LinksConfig& links) {
  bool any = false;
  for (int32_t r = 0; r < size(); ++r) any = any || tiers_used(r);
  if (!any) return;
  t_ = std::make_unique<TierState>();
  t_->cfg = cfg;
  t_->per_node = links.replicas_per_node;
  t_->nvlink = links.intra_node;
  t_->network = links.inter_node;
  const int32_t nodes = (size() + t_->per_node - 1) / t_->per_node;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  for (int32_t n = 0; n < nodes; ++n)
    t_->nodes.emplace_back(TierKind::kNodeCpu, cfg.node_cpu.capacity_gib * kGiB);
  t_->pool = TierStore(TierKind::kPool, cfg.pool.capacity_gib * kGiB);
  for (int32_t r = 0; r < size(); ++r) {
    t_->links.add(cfg.node_cpu.link);
    t_->links.add(t_->nvlink);
    t_->links.add(cfg.pool.link);
  }
  t_->stats.enabled = true;
}

bool Cluster::tiers_used(int32_t r) const {
  return engines_[static_cast<size_t>(r)]->kv_manager().uses_tiers();
}

void Cluster::evicting(int32_t r, const sim::SessionState& s) {
  if (!t_) return;
  const sim::KvManager& m = engine(r).kv_manager();
  const bool cpu = t_->nodes[static_cast<size_t>(r / t_->per_node)].present();
  const bool pool = t_->pool.present();
  const sim::Demote to = m.uses_tiers() ? m.demote_to(s, now(), cpu, pool) : sim::Demote::kDrop;
  if (to == sim::Demote::kDrop) {
    t_->stats.lost_tokens[kLostGpu] += s.kv;
    return;
  }
  demote(r, s, to);
}

void Cluster::demote(int32_t r, const sim::SessionState& s, sim::Demote to) {
  const bool to_cpu = to == sim::Demote::kNodeCpu;
  const int32_t node = r / t_->per_node;
  TierStore& store = to_cpu ? t_->nodes[static_cast<size_t>(node)] : t_->pool;
  TierEntry e{s.idx, s.kv, kv_bytes(engine(r), s.kv), now(), sim::kForever, s.generation};
  if (e.bytes > store.capacity()) {
    t_->stats.lost_tokens[kLostGpu] += s.kv;
    return;
  }
  store_entry(store, e, engine(r).kv_manager());
  const int k = to_cpu ? 0 : 1;
  ++t_->stats.demotions[static_cast<size_t>(k)];
  t_->stats.demoted_tokens[static_cast<size_t>(k)] += s.kv;
  TierCopy c;
  c.kind = TierCopy::kDemote;
  c.session = s.idx;
  c.tier = store.kind();
  c.node = node;
  c.written = e.written;
  c.tokens = s.kv;
  start_copy(3 * r + (to_cpu ? 0 : 2), e.bytes, c);
}

// Puts e into `store`, giving up entries in the manager's eviction order; a node's CPU tier
// sends what it gives up down to the pool when there is one.
void Cluster::store_entry(TierStore& store, const TierEntry& e, const sim::KvManager& m) {
  auto first_to_go = [this, &m](const TierEntry& a, const TierEntry& b) {
    const Location la = ledger_.where(a.session), lb = ledger_.where(b.session);
    const sim::SessionState& sa = engine(la.replica).view().session(la.handle);
    const sim::SessionState& sb = engine(lb.replica).view().session(lb.handle);
    if (m.evict_before(sa, sb, now())) return true;
    return !m.evict_before(sb, sa, now()) && a.session > b.session;
  };
  bool fits = false;
  const std::vector<TierEntry> gone = store.make_room(e.bytes, fits, first_to_go);
  store.put(e);
  const bool cascade = store.kind() == TierKind::kNodeCpu && t_->pool.present();
  for (TierEntry g : gone) {
    if (!cascade || g.bytes > t_->pool.capacity()) {
      t_->stats.lost_tokens[store.kind() == TierKind::kNodeCpu ? kLostNodeCpu : kLostPool] +=
          g.tokens;
      continue;
    }
    // Host to pool: not on a GPU's link; it lands a lone transfer's time after both ends have
    // the data.
    g.ready = std::max(g.ready == sim::kForever ? now() : g.ready, now()) +
              transfer_estimate(t_->cfg.pool.link, g.bytes);
    t_->stats.link_bytes[kLinkCascade] += g.bytes;
    store_entry(t_->pool, g, m);
  }
}

void Cluster::start_copy(int32_t li, double bytes, const TierCopy& c) {
  const int64_t id = t_->links[li].start(now(), bytes);
  t_->copies[{li, id}] = c;
  const int kind = li % 3;
  t_->stats.link_bytes[kind == 0 ? kLinkPcie : kind == 1 ? kLinkNvlink : kLinkNetwork] += bytes;
  schedule_tier_link(li);
}

void Cluster::schedule_tier_link(int32_t li) { t_->links.schedule(queue_, kEvTierLink, li); }

void Cluster::on_tier_link(int32_t li) {
  for (int64_t id : t_->links.fire(li, now())) {
    auto node = t_->copies.extract({li, id});
    land_copy(node.mapped());
  }
  schedule_tier_link(li);
}

void Cluster::land_copy(const TierCopy& c) {
  if (c.kind == TierCopy::kDemote) {
    TierStore& store =
        c.tier == TierKind::kNodeCpu ? t_->nodes[static_cast<size_t>(c.node)] : t_->pool;
    store.mark_ready(c.session, c.written, now());
    return;
  }
  if (c.kind == TierCopy::kFetchPeer) {
    replica(c.src).handoff().finish_export(c.src_h);
    touch(c.src);
  }
  sim::Engine& dst = replica(c.dst);
  dst.handoff().finish_import(c.dst_h, 0);
  ledger_.placed(c.session, c.dst, c.dst_h);
  t_->fetch_s_sum += sim::to_seconds(now() - c.ended_at);
  resume_on(c.dst, c.dst_h, c.intercept_s, c.ended_at);
  touch(c.dst);
}

}  // namespace isim::cluster
