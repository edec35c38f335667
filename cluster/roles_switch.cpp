// A disaggregated fleet's role switches (cluster/roles.h): the planner's changes checked and
// begun, drains, the switch cost, the KV of paused sessions on a replica that stops decoding,
// and the role time series and results.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/roles.h"
#include "cluster/roles_pool.h"

namespace isim::cluster {

void Roles::handle(const sim::Event& ev) {
  if (ev.type != kSwitchDone) unknown(ev);
  finish_switch(static_cast<int32_t>(ev.arg));
}

void Roles::paused(int32_t r, int32_t h, const sim::SessionState& s) {
  // Paused on a replica that no longer decodes: its KV is settled by paused_kv after this
  // instant's events (the engine's policy acts on the pause first).
  if (cfg_.switching.paused_kv != "keep" && roles_[static_cast<size_t>(r)] == Role::kPrefill)
    stray_paused_.push_back({r, h, s.idx});
}

void Roles::apply(const std::vector<RoleChange>& changes) {
  auto bad = [this](const std::string& m) {
    throw std::logic_error(fmt::format("planner {}: {}", stats_.planner, m));
  };
  std::vector<Role> after = switch_to_;
  std::vector<char> changed(static_cast<size_t>(f_.size()), 0);
  for (const RoleChange& c : changes) {
    if (c.replica < 0 || c.replica >= f_.size()) bad(fmt::format("no replica {}", c.replica));
    const auto r = static_cast<size_t>(c.replica);
    if (changed[r]) bad(fmt::format("replica {} changed twice", c.replica));
    if (switching_[r]) bad(fmt::format("replica {} is switching", c.replica));
    if (roles_[r] == Role::kMixed || c.to == Role::kMixed)
      bad(fmt::format("replica {}: planners move replicas between prefill and decode only",
                      c.replica));
    changed[r] = 1;
    after[r] = c.to;
  }
  const auto np = std::count(after.begin(), after.end(), Role::kPrefill);
  const auto nd = std::count(after.begin(), after.end(), Role::kDecode);
  if (np < 1 || nd < 1)
    bad("a disaggregated fleet keeps at least one prefill and one decode replica");
  for (const RoleChange& c : changes)
    if (roles_[static_cast<size_t>(c.replica)] != c.to) begin_switch(c.replica, c.to);
}

void Roles::begin_switch(int32_t r, Role to) {
  const auto i = static_cast<size_t>(r);
  ++stats_.role_switches;
  switch_to_[i] = to;
  switching_[i] = 1;
  if (cfg_.switching.drain_first || cfg_.switching.restart) {
    draining_[i] = 1;  // progress_switches pays the cost once its work is done
    return;
  }
  roles_[i] = to;  // zero-downtime: new work follows the new role at once
  progress_switches();
}

void Roles::progress_switches() {
  for (int32_t r = 0; r < f_.size(); ++r) {
    const auto i = static_cast<size_t>(r);
    if (!switching_[i] || f_.engine(r).handoff().held_until() > f_.now()) continue;
    sim::Engine& e = f_.replica(r);
    if (draining_[i]) {
      if (e.has_work() || !e.view().queues().exporting().empty() ||
          !e.view().queues().importing().empty() || !imports_[i].empty())
        continue;
      draining_[i] = 0;
    } else if (roles_[i] != switch_to_[i]) {
      continue;
    }
    if (cfg_.switching.restart) {
      // The worker restarts: all of its KV is gone.
      const auto [paused_tokens, cached_blocks] = e.handoff().restart(sim::LostCause::kRoleSwitch);
      ++stats_.restarts;
      stats_.restart_paused_tokens += paused_tokens;
      stats_.restart_cached_tokens += cached_blocks * e.view().block_tokens();
      f_.touch(r);
    } else if (cfg_.switching.paused_kv != "keep" && switch_to_[i] == Role::kPrefill) {
      // It stops decoding: the KV of its paused sessions is dropped or moved.
      const std::vector<int32_t> paused = e.view().paused();
      for (int32_t h : paused) relocate_paused(r, h);
    }
    const sim::Nanos until = f_.now() + sim::from_seconds(cfg_.switching.cost_s);
    e.handoff().hold_until(until + 1);  // released by the switch-done event
    roles_[i] = switch_to_[i];
    draining_[i] = 2;  // paying the cost
    schedule(until, sim::kPrioSwitch, kSwitchDone, r);
  }
}

void Roles::finish_switch(int32_t r) {
  const auto i = static_cast<size_t>(r);
  switching_[i] = 0;
  draining_[i] = 0;
  f_.replica(r).handoff().hold_until(0);
  f_.touch(r);
}

// The decode (or mixed) replica, other than src and not leaving the role, with the most free
// blocks that can take `kv` tokens now; ties go to the lowest index. -1: none.
int32_t Roles::move_target(int32_t src, int64_t kv) {
  int32_t best = -1;
  int64_t most = -1;
  for (int32_t r = 0; r < f_.size(); ++r) {
    const auto i = static_cast<size_t>(r);
    if (r == src || draining_[i] || !in_pool(roles_[i], kLocalPool) ||
        !in_pool(switch_to_[i], kLocalPool) || !f_.engine(r).handoff().can_import(kv))
      continue;
    if (f_.engine(r).view().gpu().free() > most) {
      most = f_.engine(r).view().gpu().free();
      best = r;
    }
  }
  return best;
}

void Roles::relocate_paused(int32_t r, int32_t h) {
  sim::Engine& e = f_.replica(r);
  const sim::SessionState& s = e.view().session(h);
  if (s.kv == 0) return;
  if (cfg_.switching.paused_kv == "drop") {
    stats_.switch_dropped_tokens += s.kv;
    e.handoff().drop_paused(h, sim::LostCause::kRoleSwitch);
    f_.touch(r);
    return;
  }
  const int32_t dst = e.handoff().can_move_paused(h) ? move_target(r, s.kv) : -1;
  if (dst < 0) {
    // No decode replica has room (or the KV is on the CPU): it stays, and the engine evicts it
    // if it needs the blocks.
    stats_.switch_kept_tokens += s.kv;
    return;
  }
  e.handoff().start_move(h);
  KvMove m;
  m.kind = KvMove::kPausedMove;
  m.session = s.idx;
  m.src = r;
  m.src_h = h;
  m.since = f_.now();
  launch(dst, kv_bytes(e, s.kv), m);
}

void Roles::settle_strays() {
  if (stray_paused_.empty()) return;
  std::vector<std::array<int32_t, 3>> strays;
  strays.swap(stray_paused_);
  for (const auto& [r, h, idx] : strays) {
    const sim::SessionState& s = f_.engine(r).view().session(h);
    // Still paused here, and here still not decoding.
    if (s.idx == idx && s.phase == sim::Phase::kPaused &&
        roles_[static_cast<size_t>(r)] == Role::kPrefill)
      relocate_paused(r, h);
  }
}

void Roles::sample(sim::Nanos t, const std::vector<ReplicaSample>& replica_ts) {
  RoleSample s;
  s.t_s = sim::to_seconds(t);
  // This instant's replica samples are the last size() entries, in replica order.
  const size_t first = replica_ts.size() - static_cast<size_t>(f_.size());
  for (int32_t r = 0; r < f_.size(); ++r) {
    const auto i = static_cast<size_t>(r);
    const sim::Engine& e = f_.engine(r);
    if (switching_[i]) ++s.switching;
    switch (roles_[i]) {
      case Role::kMixed:
        ++s.mixed;
        break;
      case Role::kPrefill:
        ++s.prefill;
        s.prefill_queued_tokens += e.view().load().queued_prefill_tokens;
        break;
      case Role::kDecode:
        ++s.decode;
        s.decode_waiting += static_cast<int32_t>(replica_ts[first + i].s.waiting) +
                            static_cast<int32_t>(imports_[i].size());
        break;
    }
  }
  stats_.roles.push_back(s);
}

void Roles::fill(RunResult& r) const {
  r.disagg = stats_;
  const auto n = static_cast<double>(stats_.transfers);
  r.disagg.transfer_s_mean = n > 0 ? transfer_s_sum_ / n : 0;
  r.disagg.transfer_wait_s_mean = n > 0 ? wait_s_sum_ / n : 0;
  const auto nf = static_cast<double>(stats_.resume_fetches);
  r.disagg.resume_fetch_s_mean = nf > 0 ? fetch_s_sum_ / nf : 0;
}

}  // namespace isim::cluster
