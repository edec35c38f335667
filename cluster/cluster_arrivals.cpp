// The cluster's arrivals beyond the plain schedule: forks resolved at load and the fork's
// shared chain as a subagent arrives, and start dependencies (trace::StartAfter; their
// contract is in cluster/cluster.h).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "cluster/cluster.h"
#include "core/input_error.h"

namespace isim::cluster {

void Cluster::resolve_forks() {
  fork_parent_.assign(trace_.size(), -1);
  const bool any = std::any_of(trace_.begin(), trace_.end(), [](const trace::Session& s) {
    return s.segments.front().event.kind == trace::ContextEventKind::kFork;
  });
  if (!any) return;  // no index to build
  std::unordered_map<std::string, int32_t> by_id;
  for (size_t i = 0; i < trace_.size(); ++i) by_id.emplace(trace_[i].id, static_cast<int32_t>(i));
  for (size_t i = 0; i < trace_.size(); ++i) {
    const trace::ContextEvent& ev = trace_[i].segments.front().event;
    if (ev.kind != trace::ContextEventKind::kFork) continue;
    auto it = by_id.find(ev.parent);
    if (it == by_id.end() || it->second == static_cast<int32_t>(i))
      throw InputError(fmt::format("session {}: segments[0].context_event.parent: no other "
                                   "session '{}' in the trace",
                                   trace_[i].id, ev.parent));
    fork_parent_[i] = it->second;
  }
}

sim::SessionState Cluster::arriving(int32_t i) {
  const trace::Session& src = trace_[static_cast<size_t>(i)];
  // Now, not arrival_s: a session with a start dependency arrives when that fires.
  sim::SessionState s = sim::SessionState::arrive(src, i, now());
  const int32_t p = fork_parent_.empty() ? -1 : fork_parent_[static_cast<size_t>(i)];
  if (p < 0 || ledger_.status(p) != Status::kOnReplica) return s;
  const Location at = ledger_.where(p);
  const sim::SessionState& ps = engine(at.replica).session(at.handle);
  if (ps.chain_block_tokens <= 0) return s;
  const int64_t tokens = src.segments.front().event.tokens;
  const auto blocks = std::min<size_t>(static_cast<size_t>(tokens / ps.chain_block_tokens),
                                       ps.chain.size());
  if (blocks == 0) return s;
  s.fork_chain.assign(ps.chain.begin(), ps.chain.begin() + static_cast<std::ptrdiff_t>(blocks));
  s.fork_block_tokens = ps.chain_block_tokens;
  replica(at.replica).share_chain(at.handle);
  fork_session_ = i;
  fork_block_tokens_ = s.fork_block_tokens;
  fork_chain_ = s.fork_chain;
  return s;
}

void Cluster::load_start_after() {
  const auto n = static_cast<int32_t>(trace_.size());
  for (int32_t i = 0; i < n; ++i) {
    const trace::StartAfter& a = trace_[static_cast<size_t>(i)].start_after;
    if (a.session == -1) continue;
    if (a.session < 0 || a.session >= i || !std::isfinite(a.delay_s) || a.delay_s < 0)
      throw std::logic_error(fmt::format(
          "Cluster: session {} ({}) starts after session {} with delay {} s; a start dependency "
          "names an earlier session of the trace and a finite delay >= 0",
          i, trace_[static_cast<size_t>(i)].id, a.session, a.delay_s));
    if (dependents_.empty()) {
      dependents_.resize(trace_.size());
      never_fits_.assign(trace_.size(), 0);
    }
    dependents_[static_cast<size_t>(a.session)].push_back(i);
  }
}

bool Cluster::starting(int32_t i) {
  if (dependents_.empty()) return true;
  if (has_start_after(i)) ledger_.arrived(i, now());
  if (!never_fits_[static_cast<size_t>(i)]) return true;
  start_dependents(i, Trigger::kBoth);  // skipped: finished at the instant it arrives
  return false;
}

void Cluster::start_dependents(int32_t p, Trigger why) {
  for (int32_t j : dependents_[static_cast<size_t>(p)]) {
    const trace::StartAfter& a = trace_[static_cast<size_t>(j)].start_after;
    if (why != Trigger::kBoth && a.on_finish != (why == Trigger::kFinish)) continue;
    queue_.schedule(now() + sim::from_seconds(a.delay_s), sim::kPrioArrival, sim::kClusterTarget,
                    kEvStartAfter, j);
  }
}

}  // namespace isim::cluster
