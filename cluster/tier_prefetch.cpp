// Reload prices and prefetch for the fleet's KV tiers (cluster/tiers.h): each replica's KV
// manager learns what bringing KV back would cost there, and a periodic check brings tier KV
// back to a paused session's GPU before its intercept ends when the manager asks for it.
#include <algorithm>
#include <limits>
#include <vector>

#include "cluster/intercepts.h"
#include "cluster/tiers.h"
#include "sim/block_manager.h"

namespace isim::cluster {

// Bringing back `tokens` on replica r: the cheaper of a recompute and a fetch from the nearest
// tier present.
class Tiers::Pricer final : public sim::ReloadPricer {
 public:
  Pricer(const Tiers& t, int32_t r) : t_(t), r_(r) {}
  double reload_s(int64_t tokens) const override {
    const sim::Engine& e = t_.f_.engine(r_);
    double best = sim::to_seconds(t_.prefill_cost(e, 0, tokens));
    const double b = bytes(tokens);
    const TierStore& node = t_.nodes_[static_cast<size_t>(r_ / t_.per_node_)];
    if (node.present())
      best = std::min(best, sim::to_seconds(transfer_estimate(t_.cfg_.node_cpu.link, b)));
    else if (t_.pool_.present())
      best = std::min(best, sim::to_seconds(transfer_estimate(t_.cfg_.pool.link, b)));
    return best;
  }
  double bytes(int64_t tokens) const override { return kv_bytes(t_.f_.engine(r_), tokens); }

 private:
  const Tiers& t_;
  int32_t r_;
};

// The periodic prefetch check's events; they do not keep the run going.
class Tiers::PrefetchTimer final : public Component {
 public:
  PrefetchTimer(Fleet& f, Tiers& t, sim::Nanos every) : Component(f), t_(t), every_(every) {
    next();
  }
  void handle(const sim::Event& ev) override {
    if (ev.type != 0) unknown(ev);
    if (t_.prefetch_check()) next();
  }
  bool keeps_run() const override { return false; }

 private:
  void next() { schedule(f_.now() + every_, sim::kPrioPlanner + 50, 0, 0); }
  Tiers& t_;
  sim::Nanos every_;
};

void Tiers::set_up_prices_and_prefetch() {
  double every = std::numeric_limits<double>::infinity();
  for (int32_t r = 0; r < f_.size(); ++r) {
    pricers_.push_back(std::make_unique<Pricer>(*this, r));
    if (sim::KvManager* m = f_.spec(r).kv_manager) {
      m->set_pricer(pricers_.back().get());
      if (m->prefetch_interval_s() > 0) every = std::min(every, m->prefetch_interval_s());
    }
  }
  if (every < std::numeric_limits<double>::infinity())
    prefetch_timer_ = std::make_unique<PrefetchTimer>(
        f_, *this, std::max<sim::Nanos>(sim::from_seconds(every), 1));
}

bool Tiers::prefetch_check() {
  if (f_.all_done()) return false;
  // A replica that evicted idle KV or preempted since the last check needs its blocks for the
  // work it runs: no prefetch to it this time.
  pressed_.resize(static_cast<size_t>(f_.size()), 0);
  std::vector<bool> calm(static_cast<size_t>(f_.size()));
  for (int32_t r = 0; r < f_.size(); ++r) {
    const sim::Counters& k = f_.engine(r).counters();
    const int64_t now_pressed = k.idle_evictions + k.preemptions;
    calm[static_cast<size_t>(r)] = now_pressed == pressed_[static_cast<size_t>(r)];
    pressed_[static_cast<size_t>(r)] = now_pressed;
  }
  // Candidates first (a prefetch takes its entry out of the store): (store, session).
  std::vector<std::pair<TierStore*, int32_t>> offers;
  auto collect = [&](TierStore& st) {
    for (const auto& [idx, e] : st.entries())
      if (e.ready <= f_.now()) offers.emplace_back(&st, idx);
  };
  for (TierStore& n : nodes_) collect(n);
  collect(pool_);
  for (const auto& [store, idx] : offers) {
    const TierEntry* e = store->find(idx);
    if (e && f_.ledger().status(idx) == Status::kOnReplica &&
        calm[static_cast<size_t>(f_.ledger().where(idx).replica)])
      try_prefetch(*store, *e);
  }
  return true;
}

bool Tiers::try_prefetch(TierStore& store, const TierEntry& entry) {
  const int32_t i = entry.session;
  if (f_.ledger().status(i) != Status::kOnReplica || prefetching(i)) return false;
  const Location at = f_.ledger().where(i);
  const int32_t r = at.replica;
  const bool cpu = store.kind() == TierKind::kNodeCpu;
  if (cpu && &store != &node_of(r)) return false;  // another node's CPU tier
  const sim::Engine& eng = f_.engine(r);
  const sim::KvManager& m = eng.kv_manager();
  const sim::SessionState& s = eng.view().session(at.handle);
  if (m.prefetch_interval_s() <= 0 || s.phase != sim::Phase::kPaused || s.kv != 0 ||
      s.moving_paused || entry.generation != s.generation || entry.tokens > s.context)
    return false;
  const double bytes = kv_bytes(eng, entry.tokens);
  const LinkSpec& link = cpu ? cfg_.node_cpu.link : cfg_.pool.link;
  if (!m.prefetch_now(s, f_.now(), sim::to_seconds(transfer_estimate(link, bytes)))) return false;
  // Room: free blocks beyond what queued and running work needs (the prefill still to do, and
  // a block of growth per decoding session); nothing is evicted for it.
  const int64_t bt = eng.view().block_tokens();
  const sim::ReplicaLoad load = eng.view().load();
  const int64_t busy = sim::blocks_for(load.queued_prefill_tokens, bt) + load.decode_sequences;
  if (eng.view().gpu().free() - sim::blocks_for(entry.tokens, bt) < busy) return false;
  // Resumed sessions' fetches waiting for room there come first.
  if (std::any_of(pending_.begin(), pending_.end(),
                  [r](const PendingFetch& p) { return p.dst == r; }))
    return false;
  sim::Engine& dst = f_.replica(r);
  if (!dst.handoff().can_import(entry.tokens)) return false;
  const TierEntry e = store.take(i);
  sim::SessionState moved = dst.handoff().export_paused(at.handle, sim::LostCause::kMigration);
  KvMove c;
  c.kind = KvMove::kPrefetch;
  c.session = i;
  c.dst = r;
  c.dst_h = dst.handoff().reserve_fetch(std::move(moved), e.tokens);
  c.since = f_.now();
  c.tokens = e.tokens;
  c.tier = store.kind();
  f_.ledger().placed(i, r, c.dst_h);
  const size_t k = cpu ? 1 : 2;
  ++stats_.prefetches;
  ++stats_.fetches[k];
  stats_.fetched_tokens[k] += e.tokens;
  prefetch_flight_[i] = Flight{bytes, -1};
  start_copy(r, cpu ? 0 : 2, bytes, c);
  f_.touch(r);
  return true;
}

void Tiers::prefetch_landed(const KvMove& c) {
  const Flight fl = prefetch_flight_.at(c.session);
  prefetch_flight_.erase(c.session);
  f_.replica(c.dst).handoff().finish_import(c.dst_h, 0);  // paused again, with its KV
  f_.touch(c.dst);
  prefetched_[c.session] = fl.bytes;
  if (fl.resume >= 0) {
    fetch_s_sum_ += sim::to_seconds(f_.now() - fl.resume);  // its turn waited for the copy
    f_.parts().intercepts->resume(c.session, fl.resume);
  }
}

void Tiers::prefetch_settled(int32_t i, bool hit) {
  const auto it = prefetched_.find(i);
  if (hit)
    ++stats_.prefetch_hits;
  else
    stats_.prefetch_wasted_bytes += it->second;
  prefetched_.erase(it);
}

}  // namespace isim::cluster
