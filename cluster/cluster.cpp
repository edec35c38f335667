#include "cluster/cluster.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "traces/input_error.h"

namespace isim::cluster {

// The fleet as a router sees it while placing one session.
class Cluster::View final : public ClusterView {
 public:
  View(const Cluster& c, int32_t q) : c_(c), q_(q), src_(c.trace_[static_cast<size_t>(q)]) {}
  int32_t replicas() const override { return c_.size(); }
  const sim::ReplicaView& replica(int32_t r) const override {
    return *c_.engines_[static_cast<size_t>(r)];
  }
  bool eligible(int32_t r) const override {
    return c_.fits_all_[static_cast<size_t>(q_)] ||
           c_.engines_[static_cast<size_t>(r)]->never_fits(src_).empty();
  }
  const std::vector<uint64_t>& prefix_chain(int32_t r) const override {
    const int64_t bt = replica(r).block_tokens();
    for (const auto& [b, chain] : chains_)
      if (b == bt) return chain;
    chains_.emplace_back(bt, sim::prefix_chain(src_, bt));
    return chains_.back().second;
  }

 private:
  const Cluster& c_;
  int32_t q_;
  const trace::Session& src_;
  mutable std::vector<std::pair<int64_t, std::vector<uint64_t>>> chains_;
};

Cluster::Cluster(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
                 bool check_invariants)
    : trace_(trace),
      specs_(std::move(replicas)),
      router_(router),
      check_(check_invariants),
      ledger_(trace),
      admitted_(specs_.size(), 0),
      resumed_(specs_.size(), 0),
      is_touched_(specs_.size(), 0) {
  if (specs_.empty()) throw InputError("cluster.replicas: must be >= 1");
  for (size_t r = 0; r < specs_.size(); ++r) {
    auto& sp = specs_[r];
    if (!sp.executor || !sp.policy) throw std::logic_error("Cluster: a replica lacks its parts");
    sp.config.check_invariants = sp.config.check_invariants || check_;
    engines_.push_back(std::make_unique<sim::Engine>(static_cast<int32_t>(r), queue_, sp.config,
                                                     *sp.executor, *sp.policy));
    engines_.back()->set_listener(this);
  }
  const double dt = specs_.front().config.timeseries_interval_s;
  dt_ = dt > 0 ? sim::from_seconds(dt) : 0;
}

void Cluster::set_observer(std::function<void(const sim::IterationRecord&)> f) {
  for (auto& e : engines_) e->set_observer(f);
}

void Cluster::load() {
  for (size_t r = 0; r < specs_.size(); ++r)
    if (specs_[r].executor->live())
      specs_[r].executor->begin(trace_, engines_[r]->blocks().gpu, engines_[r]->blocks().cpu);
  std::set<int64_t> block_sizes;
  for (const auto& e : engines_) block_sizes.insert(e->block_tokens());
  fits_all_.assign(trace_.size(), 0);
  for (size_t i = 0; i < trace_.size(); ++i) {
    const trace::Session& src = trace_[i];
    for (size_t k = 0; k < src.segments.size(); ++k)
      if (src.segments[k].output < 1)
        throw InputError(
            fmt::format("session {}: segments[{}].output: must be >= 1 (every "
                        "segment decodes at least one token)",
                        src.id, k));
    // Where no replica fits, the first one says why.
    size_t fit = 0;
    std::string why;
    for (size_t r = 0; r < engines_.size(); ++r) {
      std::string w = engines_[r]->never_fits(src);
      if (w.empty()) ++fit;
      if (r == 0) why = std::move(w);
    }
    if (fit == 0) {
      ledger_.skipped(static_cast<int32_t>(i));
      skipped_.push_back(fmt::format("session {} skipped: {}", src.id, why));
      continue;
    }
    fits_all_[i] = fit == engines_.size();
    for (int64_t bt : block_sizes) sim::prefix_chain(src, bt);  // InputError before the run
    arrivals_.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(arrivals_.begin(), arrivals_.end(), [this](int32_t a, int32_t b) {
    return sim::from_seconds(trace_[static_cast<size_t>(a)].arrival_s) <
           sim::from_seconds(trace_[static_cast<size_t>(b)].arrival_s);
  });
  schedule_next_arrival();
}

void Cluster::schedule_next_arrival() {
  if (next_arrival_ >= arrivals_.size()) return;
  const int32_t i = arrivals_[next_arrival_++];
  queue_.schedule(sim::from_seconds(trace_[static_cast<size_t>(i)].arrival_s), sim::kPrioArrival,
                  sim::kClusterTarget, kEvArrival, i);
}

int32_t Cluster::route(const RouteRequest& q) {
  View v(*this, q.session);
  const int32_t r = router_.route(q, v);
  if (r < 0 || r >= size() || !v.eligible(r))
    throw std::logic_error(
        fmt::format("router {} placed session {} on replica {}, which cannot "
                    "take it",
                    router_.name(), q.session, r));
  return r;
}

void Cluster::on_arrival(int32_t i) {
  schedule_next_arrival();
  if (!opened_) {
    // Waste accounting starts for the whole fleet at the first arrival.
    for (auto& e : engines_) e->open(now());
    opened_ = true;
  }
  const trace::Session& src = trace_[static_cast<size_t>(i)];
  RouteRequest q;
  q.session = i;
  q.context_tokens = src.segments.front().input;
  const int32_t r = route(q);
  ++admitted_[static_cast<size_t>(r)];
  touch(r);
  const int32_t h =
      replica(r).admit(sim::SessionState::arrive(src, i, sim::from_seconds(src.arrival_s)));
  ledger_.placed(i, r, h);
}

void Cluster::on_intercept_end(int32_t i) {
  const Location at = ledger_.where(i);
  sim::Engine& holder = replica(at.replica);
  const sim::SessionState& s = holder.session(at.handle);
  const trace::Session& src = trace_[static_cast<size_t>(i)];
  const auto seg = static_cast<size_t>(s.segments_done());
  const double duration_s = src.segments[seg].intercept->duration_s;
  RouteRequest q;
  q.session = i;
  q.resume = true;
  q.holder = at.replica;
  q.holder_kv_tokens = s.kv;
  q.holder_gpu_blocks = static_cast<int64_t>(s.gpu_blocks.size());
  q.context_tokens = s.context + src.segments[seg + 1].input;
  const int32_t r = route(q);
  ++resumed_[static_cast<size_t>(r)];
  touch(r);
  if (r == at.replica) {
    holder.resume(at.handle, duration_s);
    return;
  }
  sim::SessionState moved = holder.export_paused(at.handle, sim::LostCause::kMigration);
  touch(at.replica);  // its freed blocks may let a waiting session in
  ++moved.m.migrations;
  ++migrations_;
  ledger_.placed(i, r, replica(r).admit_resumed(std::move(moved), duration_s));
}

void Cluster::paused(int32_t, int32_t, const sim::SessionState& s, sim::Nanos duration) {
  queue_.schedule(now() + duration, sim::kPrioInterceptEnd, sim::kClusterTarget, kEvInterceptEnd,
                  s.idx);
}

void Cluster::finished(int32_t, const sim::SessionState& s) {
  ledger_.finished(s.idx, s.m);
}

void Cluster::turn_first_token(int32_t, const sim::SessionState&, sim::Nanos ttft) {
  ledger_.turn_ttft(sim::to_seconds(ttft));
}

void Cluster::touch(int32_t r) {
  if (is_touched_[static_cast<size_t>(r)]) return;
  is_touched_[static_cast<size_t>(r)] = 1;
  touched_.push_back(r);
}

void Cluster::dispatch(const sim::Event& ev) {
  if (ev.target != sim::kClusterTarget) {
    replica(ev.target).handle(ev);
    touch(ev.target);
    return;
  }
  switch (ev.type) {
    case kEvArrival:
      on_arrival(static_cast<int32_t>(ev.arg));
      break;
    case kEvInterceptEnd:
      on_intercept_end(static_cast<int32_t>(ev.arg));
      break;
    default:
      throw std::logic_error("Cluster: unknown event type");
  }
}

void Cluster::sample(sim::Nanos t) {
  sim::TimeSample fleet;
  fleet.t_s = sim::to_seconds(t);
  for (const auto& e : engines_) {
    sim::TimeSample s = e->sample(t);
    replica_ts_.push_back({e->replica(), s});
    fleet.merge(s);
  }
  fleet_ts_.push_back(fleet);
}

bool Cluster::run_until(sim::Nanos horizon) {
  while (!queue_.empty()) {
    const sim::Nanos t = queue_.top().time;
    if (t > horizon) return false;
    // Samples strictly before t see the state left by the events before t.
    while (dt_ > 0 && next_sample_ < t) {
      sample(next_sample_);
      next_sample_ += dt_;
    }
    while (!queue_.empty() && queue_.top().time == t) dispatch(queue_.pop());
    // Only a replica that had an event can have new work while idle; in replica order.
    std::sort(touched_.begin(), touched_.end());
    for (int32_t r : touched_) {
      replica(r).maybe_start();
      is_touched_[static_cast<size_t>(r)] = 0;
    }
    touched_.clear();
    end_ = t;
    if (check_) check_global();
  }
  return true;
}

void Cluster::check_global() const {
  auto fail = [](const std::string& m) { throw std::logic_error("global invariant: " + m); };
  std::vector<int32_t> seen(trace_.size(), 0);
  for (const auto& e : engines_) {
    const int32_t r = e->replica();
    for (int32_t h = 0; h < static_cast<int32_t>(e->slot_count()); ++h) {
      const sim::SessionState& s = e->session(h);
      if (s.idx < 0) continue;
      if (++seen[static_cast<size_t>(s.idx)] > 1)
        fail(fmt::format("session {} is on two replicas", s.idx));
      const Location& at = ledger_.where(s.idx);
      if (ledger_.status(s.idx) != Status::kOnReplica || at.replica != r || at.handle != h)
        fail(fmt::format("session {} is on replica {} but the ledger places it on {}", s.idx, r,
                         at.replica));
    }
  }
  for (size_t i = 0; i < trace_.size(); ++i)
    if (ledger_.status(static_cast<int32_t>(i)) == Status::kOnReplica && seen[i] != 1)
      fail(fmt::format("session {} is lost: the ledger places it on replica {}", i,
                       ledger_.where(static_cast<int32_t>(i)).replica));
}

}  // namespace isim::cluster
