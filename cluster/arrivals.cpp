// The fleet's arrivals (cluster/arrivals.h): the checks and order of load, the next arrival,
// forks resolved at load and the fork's shared chain as a subagent arrives, and start
// dependencies (trace::StartAfter).
#include "cluster/arrivals.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "cluster/planning.h"
#include "cluster/roles.h"
#include "core/input_error.h"

namespace isim::cluster {

void Arrivals::load() {
  const trace::Trace& trace = f_.trace();
  for (int32_t r = 0; r < f_.size(); ++r)
    if (f_.spec(r).executor->live())
      f_.spec(r).executor->begin(trace, f_.engine(r).view().blocks().gpu,
                                 f_.engine(r).view().blocks().cpu);
  std::set<int64_t> block_sizes;
  bool live = false;
  for (int32_t r = 0; r < f_.size(); ++r) {
    block_sizes.insert(f_.engine(r).view().block_tokens());
    live = live || f_.spec(r).executor->live();
  }
  load_start_after();
  struct Fit {
    int32_t fit = 0;  // replicas it fits
    std::string why;  // the first replica's never_fits
  };
  // By the address of the segments' storage (trace::SharedList: one per pool session of a
  // draw); a trace of distinct sessions keeps the first kMaxFitsKept.
  std::unordered_map<const void*, Fit> fits;
  constexpr size_t kMaxFitsKept = 1 << 16;
  fits_all_.assign(trace.size(), 0);
  for (size_t i = 0; i < trace.size(); ++i) {
    const trace::Session& src = trace[i];
    for (size_t k = 0; k < src.segments.size(); ++k)
      if (live && src.segments[k].event.kind != trace::ContextEventKind::kNone)
        throw InputError(
            fmt::format("session {}: segments[{}].context_event: live executors "
                        "replay no context events (run it with executor: sim)",
                        src.id, k));
    for (size_t k = 0; k < src.segments.size(); ++k)
      if (src.segments[k].output < 1)
        throw InputError(
            fmt::format("session {}: segments[{}].output: must be >= 1 (every "
                        "segment decodes at least one token)",
                        src.id, k));
    // Where no replica fits, the first one says why. never_fits reads only the segments, so
    // sessions that share them (trace.draw's copies) ask the replicas once.
    const void* key = src.segments.empty() ? nullptr : &src.segments[0];
    const auto known = key ? fits.find(key) : fits.end();
    const bool memo = known != fits.end();
    Fit own;
    if (!memo) {
      for (int32_t r = 0; r < f_.size(); ++r) {
        std::string w = f_.engine(r).never_fits(src);
        if (w.empty()) ++own.fit;
        if (r == 0) own.why = std::move(w);
      }
      if (key && fits.size() < kMaxFitsKept) fits.emplace(key, own);
    }
    const Fit& got = memo ? known->second : own;
    const int32_t fit = got.fit;
    const std::string& why = got.why;
    const auto idx = static_cast<int32_t>(i);
    if (fit == 0) {
      f_.ledger().skipped(idx);
      ++f_.counts().done;
      skipped_.push_back(fmt::format("session {} skipped: {}", src.id, why));
      if (!dependents_.empty()) {
        // It still arrives, to start its dependents (StartAfter).
        never_fits_[i] = 1;
        if (!has_start_after(idx) && !dependents_[i].empty()) order_.push_back(idx);
      }
      continue;
    }
    fits_all_[i] = fit == f_.size();
    for (int64_t bt : block_sizes) sim::prefix_chain(src, bt);  // InputError before the run
    if (!has_start_after(idx)) order_.push_back(idx);
  }
  resolve_forks();
  std::stable_sort(order_.begin(), order_.end(), [this](int32_t a, int32_t b) {
    return sim::from_seconds(f_.source(a).arrival_s) < sim::from_seconds(f_.source(b).arrival_s);
  });
  schedule_next();
}

void Arrivals::schedule_next() {
  if (next_ >= order_.size()) return;
  const int32_t i = order_[next_++];
  schedule(sim::from_seconds(f_.source(i).arrival_s), sim::kPrioArrival, kArrival, i);
}

void Arrivals::handle(const sim::Event& ev) {
  switch (ev.type) {
    case kArrival:
      schedule_next();
      arrive(static_cast<int32_t>(ev.arg));
      return;
    case kStartAfter:
      arrive(static_cast<int32_t>(ev.arg));
      return;
    default:
      unknown(ev);
  }
}

void Arrivals::open() {
  // Waste accounting starts for the whole fleet at the first arrival.
  for (int32_t r = 0; r < f_.size(); ++r) f_.replica(r).meter().open(f_.now());
  opened_ = true;
  if (f_.parts().planning) f_.parts().planning->start();
}

void Arrivals::arrive(int32_t i) {
  if (!starting(i)) return;
  if (!opened_) open();
  RouteRequest q;
  q.session = i;
  q.context_tokens = f_.source(i).segments.front().input;
  if (Planning* planning = f_.parts().planning) planning->arrival(q.context_tokens);
  sim::SessionState s = arriving(i);
  if (Roles* roles = f_.parts().roles) {
    roles->place_arrival(i, std::move(s), q);
    fork_session_ = -1;
  } else {
    const int32_t r = f_.route(q);
    fork_session_ = -1;
    ++f_.counts().admitted[static_cast<size_t>(r)];
    f_.touch(r);
    f_.ledger().placed(i, r, f_.replica(r).admit(std::move(s)));
  }
  if (!dependents_.empty()) start_dependents(i, Trigger::kArrival);
}

void Arrivals::finished(int32_t i) {
  if (!dependents_.empty()) start_dependents(i, Trigger::kFinish);
}

void Arrivals::resolve_forks() {
  const trace::Trace& trace = f_.trace();
  fork_parent_.assign(trace.size(), -1);
  const bool any = std::any_of(trace.begin(), trace.end(), [](const trace::Session& s) {
    return s.segments.front().event.kind == trace::ContextEventKind::kFork;
  });
  if (!any) return;  // no index to build
  std::unordered_map<std::string, int32_t> by_id;
  for (size_t i = 0; i < trace.size(); ++i) by_id.emplace(trace[i].id, static_cast<int32_t>(i));
  for (size_t i = 0; i < trace.size(); ++i) {
    const trace::ContextEvent& ev = trace[i].segments.front().event;
    if (ev.kind != trace::ContextEventKind::kFork) continue;
    auto it = by_id.find(ev.parent);
    if (it == by_id.end() || it->second == static_cast<int32_t>(i))
      throw InputError(
          fmt::format("session {}: segments[0].context_event.parent: no other "
                      "session '{}' in the trace",
                      trace[i].id, ev.parent));
    fork_parent_[i] = it->second;
  }
}

sim::SessionState Arrivals::arriving(int32_t i) {
  const trace::Session& src = f_.source(i);
  // Now, not arrival_s: a session with a start dependency arrives when that fires.
  sim::SessionState s = sim::SessionState::arrive(src, i, f_.now());
  const int32_t p = fork_parent_.empty() ? -1 : fork_parent_[static_cast<size_t>(i)];
  if (p < 0 || f_.ledger().status(p) != Status::kOnReplica) return s;
  const Location at = f_.ledger().where(p);
  const sim::SessionState& ps = f_.engine(at.replica).view().session(at.handle);
  if (ps.chain_block_tokens <= 0) return s;
  const int64_t tokens = src.segments.front().event.tokens;
  const auto blocks =
      std::min<size_t>(static_cast<size_t>(tokens / ps.chain_block_tokens), ps.chain.size());
  if (blocks == 0) return s;
  s.fork_chain.assign(ps.chain.begin(), ps.chain.begin() + static_cast<std::ptrdiff_t>(blocks));
  s.fork_block_tokens = ps.chain_block_tokens;
  f_.replica(at.replica).handoff().share_chain(at.handle);
  fork_session_ = i;
  fork_block_tokens_ = s.fork_block_tokens;
  fork_chain_ = s.fork_chain;
  return s;
}

void Arrivals::load_start_after() {
  const auto n = static_cast<int32_t>(f_.trace().size());
  for (int32_t i = 0; i < n; ++i) {
    const trace::StartAfter& a = f_.source(i).start_after;
    if (a.session == -1) continue;
    if (a.session < 0 || a.session >= i || !std::isfinite(a.delay_s) || a.delay_s < 0)
      throw std::logic_error(fmt::format(
          "Cluster: session {} ({}) starts after session {} with delay {} s; a start dependency "
          "names an earlier session of the trace and a finite delay >= 0",
          i, f_.source(i).id, a.session, a.delay_s));
    if (dependents_.empty()) {
      dependents_.resize(f_.trace().size());
      never_fits_.assign(f_.trace().size(), 0);
    }
    dependents_[static_cast<size_t>(a.session)].push_back(i);
  }
}

bool Arrivals::starting(int32_t i) {
  if (dependents_.empty()) return true;
  if (has_start_after(i)) f_.ledger().arrived(i, f_.now());
  if (!never_fits_[static_cast<size_t>(i)]) return true;
  start_dependents(i, Trigger::kBoth);  // skipped: finished at the instant it arrives
  return false;
}

void Arrivals::start_dependents(int32_t p, Trigger why) {
  for (int32_t j : dependents_[static_cast<size_t>(p)]) {
    const trace::StartAfter& a = f_.source(j).start_after;
    if (why != Trigger::kBoth && a.on_finish != (why == Trigger::kFinish)) continue;
    sim::Nanos at = f_.now() + sim::from_seconds(a.delay_s);
    if (a.windows) {  // user-phases: only inside the user's active windows
      const double t = sim::to_seconds(at), next = a.windows->next_start(t);
      if (next < 0) {
        never_start(j);
        continue;
      }
      if (next > t) at = sim::from_seconds(next);
    }
    schedule(at, sim::kPrioArrival, kStartAfter, j);
  }
}

void Arrivals::never_start(int32_t j) {
  if (f_.ledger().status(j) == Status::kPending) {  // one skipped by load is counted there
    f_.ledger().not_started(j);
    ++f_.counts().done;
    ++not_started_;
  }
  for (int32_t d : dependents_[static_cast<size_t>(j)]) never_start(d);
}

}  // namespace isim::cluster
