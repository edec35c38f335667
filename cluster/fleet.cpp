// The fleet's shared parts (cluster/fleet.h) and the router's view (cluster/fleet_view.h).
#include "cluster/fleet.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/arrivals.h"
#include "cluster/fleet_view.h"
#include "cluster/tiers.h"
#include "core/input_error.h"

namespace isim::cluster {

Component::Component(Fleet& f) : f_(f), target_(f.enlist(*this)) {}

void Component::schedule(sim::Nanos t, int32_t priority, int32_t type, int64_t arg) {
  f_.queue().schedule(t, priority, target_, type, arg);
}

void Component::unknown(const sim::Event& ev) const {
  throw std::logic_error(
      fmt::format("Cluster: unknown event type {} for target {}", ev.type, ev.target));
}

Fleet::Fleet(const trace::Trace& trace, std::vector<ReplicaSpec> specs, Router& router,
             bool engine_checks, sim::EngineListener* listener)
    : trace_(trace),
      specs_(std::move(specs)),
      router_(router),
      clocks_(specs_.size()),
      ledger_(trace) {
  if (specs_.empty()) throw InputError("cluster.replicas: must be >= 1");
  for (size_t r = 0; r < specs_.size(); ++r) {
    auto& sp = specs_[r];
    if (!sp.executor || !sp.policy) throw std::logic_error("Cluster: a replica lacks its parts");
    sp.config.check_invariants = sp.config.check_invariants || engine_checks;
    engines_.push_back(std::make_unique<sim::Engine>(static_cast<int32_t>(r), clocks_[r], sp.config,
                                                     *sp.executor, *sp.policy));
    engines_.back()->set_listener(listener);
    engines_.back()->set_kv_manager(sp.kv_manager);
    engines_.back()->notes().set_run_observer(sp.observer);
  }
  counts_.admitted.assign(specs_.size(), 0);
  counts_.resumed.assign(specs_.size(), 0);
  is_touched_.assign(specs_.size(), 0);
  changed_.assign(specs_.size(), 0);
  settled_.reserve(specs_.size());  // a replica is listed once per take: no growth
  settled_taken_.reserve(specs_.size());
  load_dirty_.assign(specs_.size(), 1);
  loads_.init(specs_.size(), LoadKey{});
  for (size_t r = 0; r < specs_.size(); ++r) engines_[r]->watch_load(&load_dirty_[r]);
}

const std::vector<int32_t>& Fleet::take_settled() {
  settled_taken_.swap(settled_);
  settled_.clear();
  return settled_taken_;
}

int32_t Fleet::least_outstanding() const {
  const uint8_t* begin = load_dirty_.data();
  const uint8_t* end = begin + load_dirty_.size();
  for (const uint8_t* p = begin; (p = static_cast<const uint8_t*>(std::memchr(p, 1, end - p)));
       ++p) {
    const auto r = static_cast<int32_t>(p - begin);
    load_dirty_[static_cast<size_t>(r)] = 0;
    // Unsettled: a pending run's load is stepping's at any instant inside it (its decodes
    // neither wait nor prefill, and only its last step may end a segment).
    const sim::Engine& e = *engines_[static_cast<size_t>(r)];
    loads_.set(static_cast<size_t>(r), {e.view().load().outstanding_tokens(), r});
  }
  return loads_.top().r;
}

void Fleet::touch(int32_t r) {
  if (is_touched_[static_cast<size_t>(r)]) return;
  is_touched_[static_cast<size_t>(r)] = 1;
  touched_.push_back(r);
}

const std::vector<int32_t>& Fleet::take_touched() {
  taken_.swap(touched_);
  touched_.clear();
  std::sort(taken_.begin(), taken_.end());
  for (int32_t r : taken_) is_touched_[static_cast<size_t>(r)] = 0;
  return taken_;
}

void Fleet::track_changes() {
  if (track_changes_) return;
  track_changes_ = true;
  for (int32_t r = 0; r < size(); ++r)
    if (changed(r)) changed_list_.push_back(r);
}

const std::vector<int32_t>& Fleet::take_changed() {
  changed_taken_.swap(changed_list_);
  changed_list_.clear();
  std::sort(changed_taken_.begin(), changed_taken_.end());
  changed_taken_.erase(std::unique(changed_taken_.begin(), changed_taken_.end()),
                       changed_taken_.end());
  return changed_taken_;
}

int32_t Fleet::route(const RouteRequest& q) {
  RouteView v(*this, q);
  const int32_t r = router_.route(q, v);
  if (r < 0 || r >= size() || !v.eligible(r))
    throw std::logic_error(
        fmt::format("router {} placed session {} on replica {}, which cannot "
                    "take it",
                    router_.name(), q.session, r));
  return r;
}

int32_t Fleet::enlist(Component& c) {
  components_.push_back(&c);
  return -static_cast<int32_t>(components_.size());
}

bool RouteView::eligible(int32_t r) const {
  const std::vector<char>& mask = f_.mask();
  if (!mask.empty() && !mask[static_cast<size_t>(r)]) return false;
  return f_.parts().arrivals->fits_all(q_) || f_.engine(r).never_fits(src_).empty();
}

int32_t ClusterView::least_outstanding() const {
  int32_t best = -1;
  int64_t best_load = 0;
  for (int32_t r = 0; r < replicas(); ++r) {
    if (!eligible(r)) continue;
    const int64_t load = replica(r).load().outstanding_tokens();
    if (best < 0 || load < best_load) {
      best = r;
      best_load = load;
    }
  }
  return best;
}

int32_t RouteView::least_outstanding() const {
  if (f_.mask().empty() && f_.parts().arrivals->fits_all(q_)) return f_.least_outstanding();
  return ClusterView::least_outstanding();
}

const std::vector<uint64_t>& RouteView::prefix_chain(int32_t r) const {
  const int64_t bt = replica(r).block_tokens();
  if (const std::vector<uint64_t>* fork = f_.parts().arrivals->fork_chain(q_, bt)) return *fork;
  for (const auto& [b, chain] : chains_)
    if (b == bt) return chain;
  chains_.emplace_back(bt, sim::prefix_chain(src_, bt));
  return chains_.back().second;
}

int64_t RouteView::reachable_kv_tokens(int32_t r) const {
  if (!req_.resume) return 0;
  if (!f_.parts().tiers) return r == req_.holder ? req_.holder_kv_tokens : 0;
  return f_.parts().tiers->plan_fetch(req_, r).tokens;
}

}  // namespace isim::cluster
