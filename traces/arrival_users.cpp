// The `users` arrival process: a closed loop of concurrent users, each replaying sessions of the
// pool one after another (contract in traces/arrival.h, rules in docs/agent-kv.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/input_error.h"
#include "core/rng.h"
#include "traces/arrival.h"

namespace isim::trace {

namespace {

constexpr int64_t kMostSessions = 10'000'000;  // users x sessions_per_user

bool seconds_ok(double s) {
  return std::isfinite(s) && s >= 0;
}
bool fraction_ok(double f) {
  return f >= 0 && f <= 1;
}  // false for NaN too

// A root and its subagents, depth first (children in trace order): members[0] is the root, and
// parent[m] is the position in members of member m's fork parent (-1 for the root).
struct Family {
  std::vector<size_t> members;
  std::vector<int32_t> parent;
};

bool forks(const Session& s) {
  return !s.segments.empty() && s.segments[0].event.kind == ContextEventKind::kFork;
}

// The pool: one family per root (a session forking from no session of the trace), in trace order.
std::vector<Family> families(const Trace& t) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < t.size(); ++i) index.emplace(t[i].id, i);
  std::vector<std::vector<size_t>> children(t.size());
  std::vector<size_t> roots;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto it = forks(t[i]) ? index.find(t[i].segments[0].event.parent) : index.end();
    if (it == index.end() || it->second == i)
      roots.push_back(i);
    else
      children[it->second].push_back(i);
  }
  std::vector<char> seen(t.size(), 0);  // a fork cycle can never reach a root, but be safe
  std::vector<Family> out;
  for (size_t r : roots) {
    Family f;
    std::vector<std::pair<size_t, int32_t>> stack = {{r, -1}};
    while (!stack.empty()) {
      const auto [i, p] = stack.back();
      stack.pop_back();
      if (seen[i]) continue;
      seen[i] = 1;
      const auto at = static_cast<int32_t>(f.members.size());
      f.members.push_back(i);
      f.parent.push_back(p);
      for (auto c = children[i].rbegin(); c != children[i].rend(); ++c) stack.push_back({*c, at});
    }
    out.push_back(std::move(f));
  }
  return out;
}

// `count` draws of [0, n): each cycle a fresh Fisher-Yates shuffle of 0..n-1, used in order.
std::vector<size_t> draws(size_t n, size_t count, Rng& rng) {
  std::vector<size_t> out, perm(n);
  out.reserve(count);
  while (out.size() < count) {
    std::iota(perm.begin(), perm.end(), size_t{0});
    for (size_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
    for (size_t r : perm)
      if (out.size() < count) out.push_back(r);
  }
  return out;
}

// Keeps the hashes of the full blocks within the first `tokens` tokens (a partial block would
// name other content once the prompt grows past it).
void trim_prefix(PrefixHashes& p, int64_t tokens) {
  if (p.empty()) return;
  p.hashes.resize(std::min(p.hashes.size(), static_cast<size_t>(tokens / p.block_tokens)));
  if (p.hashes.empty()) p = {};
}

// Drops the first `cut` segments (0 < cut < segments): the first kept segment's input then
// carries the context before it (resets counted), and its reset goes (there is no context
// before segment 0 to reset).
void advance(Session& s, size_t cut) {
  int64_t context = 0, intact = s.segments[0].input;  // intact: prompt tokens no reset cut
  for (size_t k = 0; k <= cut; ++k) {
    const Segment& g = s.segments[k];
    if (g.event.kind == ContextEventKind::kReset) {
      context = g.event.tokens;
      intact = std::min(intact, g.event.shared);
    }
    if (k == cut) break;
    context += g.input + g.output;
  }
  s.segments.erase(s.segments.begin(), s.segments.begin() + static_cast<std::ptrdiff_t>(cut));
  Segment& first = s.segments.front();
  first.input += context;
  if (first.event.kind == ContextEventKind::kReset) first.event = ContextEvent{};
  trim_prefix(s.prefix, intact);
}

// A subagent's offset `d` from its parent's start, moved onto the parent copy's timeline. On
// the parent's own timeline in the trace (its intercepts back to back, compute not counted),
// the copy loses its first `cut` segments' intercepts whole (advance) and, with a cap, each
// later intercept's excess over it: an offset keeps what precedes it of neither. -1: the fork
// falls in the skipped part.
double moved_offset(const Session& parent, double d, size_t cut, double cap) {
  double start = 0, lost = 0;  // start: where segment k's intercept begins
  for (size_t k = 0; k < parent.segments.size(); ++k) {
    const auto& ic = parent.segments[k].intercept;
    const double dur = ic ? ic->duration_s : 0;
    if (k == cut && d < start) return -1;
    if (k >= cut && start >= d) break;
    lost += k < cut ? dur : cap > 0 ? std::max(std::min(d - start, dur) - cap, 0.0) : 0;
    start += dur;
  }
  return std::max(d - lost, 0.0);
}

void cap_intercepts(Session& s, double max_delay_s) {
  if (max_delay_s <= 0) return;
  for (Segment& g : s.segments)
    if (g.intercept) g.intercept->duration_s = std::min(g.intercept->duration_s, max_delay_s);
}

// Per user: where its first session starts, and how many segments of it are skipped.
struct UserStart {
  double offset_s = 0;
  double fraction = 0;
};

int digits(int64_t n) {
  return n < 10 ? 1 : 1 + digits(n / 10);
}

// Appends user u's k-th session: family `f`'s copies. `prev` is the output index of the user's
// previous root copy (-1 for its first); returns this one's.
int32_t append_family(Trace& out, const Trace& t, const Family& f, const std::string& prefix,
                      int32_t prev, const UserStart& start, const ArrivalSpec& a) {
  std::vector<int32_t> at(f.members.size(), -1);  // each member's copy in `out` (-1: dropped)
  size_t cut = 0;                                 // the root's skipped segments (advance)
  for (size_t m = 0; m < f.members.size(); ++m) {
    const Session& src = t[f.members[m]];
    Session c = src;
    c.id = prefix + src.id;
    if (m == 0 && prev < 0) {
      c.arrival_s = start.offset_s;
      const auto n = c.segments.size();
      cut = std::min(static_cast<size_t>(start.fraction * static_cast<double>(n)), n - 1);
      if (cut > 0) advance(c, cut);
    } else if (m == 0) {
      c.start_after = StartAfter{prev, true, 0};
      c.arrival_s = out[static_cast<size_t>(prev)].arrival_s;
    } else {
      const auto p = static_cast<size_t>(f.parent[m]);
      if (at[p] < 0) continue;  // its parent was dropped
      const Session& parent = t[f.members[p]];
      const double delay = moved_offset(parent, std::max(src.arrival_s - parent.arrival_s, 0.0),
                                        p == 0 ? cut : 0, a.max_delay_s);
      if (delay < 0) continue;  // forked in the root's skipped part
      c.segments[0].event.parent = prefix + c.segments[0].event.parent;
      c.start_after = StartAfter{at[p], false, delay};
      c.arrival_s = out[static_cast<size_t>(at[p])].arrival_s + delay;
    }
    cap_intercepts(c, a.max_delay_s);
    at[m] = static_cast<int32_t>(out.size());
    out.push_back(std::move(c));
  }
  return at[0];
}

}  // namespace

ArrivalProblem users_problem(const ArrivalSpec& a) {
  if (a.users < 1)
    return {"users", fmt::format("must be an integer >= 1 (how many users replay sessions at "
                                 "once), got {}",
                                 a.users)};
  if (a.sessions_per_user < 1)
    return {"sessions_per_user",
            fmt::format("must be an integer >= 1, got {}", a.sessions_per_user)};
  if (a.users > kMostSessions / a.sessions_per_user)
    return {"users", fmt::format("users x sessions_per_user must be at most {}, got {} x {}",
                                 kMostSessions, a.users, a.sessions_per_user)};
  if (!seconds_ok(a.stagger_s))
    return {"stagger_s",
            fmt::format("must be a finite number of seconds >= 0, got {}", a.stagger_s)};
  if (!seconds_ok(a.max_delay_s))
    return {
        "max_delay_s",
        fmt::format("must be a finite number of seconds >= 0 (0: no cap), got {}", a.max_delay_s)};
  if (!fraction_ok(a.advance_min))
    return {"advance_min", fmt::format("must be a fraction in [0, 1], got {}", a.advance_min)};
  if (!fraction_ok(a.advance_max))
    return {"advance_max", fmt::format("must be a fraction in [0, 1], got {}", a.advance_max)};
  if (a.advance_min > a.advance_max)
    return {"advance_min",
            fmt::format("must be <= advance_max ({}), got {}", a.advance_max, a.advance_min)};
  return {};
}

void apply_users(Trace& t, const ArrivalSpec& a) {
  if (const ArrivalProblem p = users_problem(a); !p.key.empty())
    throw InputError("arrival." + p.key + ": " + p.reason);
  if (t.empty()) return;
  const std::vector<Family> pool = families(t);
  if (pool.empty())
    throw InputError(
        "arrival.process: users needs a session that forks from no other (a root) "
        "in the trace; every session here forks from another");
  const auto users = static_cast<size_t>(a.users),
             per_user = static_cast<size_t>(a.sessions_per_user);
  Rng rng(a.seed);
  const std::vector<size_t> drawn = draws(pool.size(), users * per_user, rng);
  std::vector<UserStart> starts(users);
  for (UserStart& s : starts) {
    s.offset_s = a.stagger_s * rng.uniform01();
    s.fraction = a.advance_min + (a.advance_max - a.advance_min) * rng.uniform01();
  }
  const int width = digits(a.users - 1);
  Trace out;
  for (size_t u = 0; u < users; ++u) {
    int32_t prev = -1;
    for (size_t k = 0; k < per_user; ++k) {
      const std::string prefix = fmt::format("u{:0{}}/{}/", u, width, k);
      prev = append_family(out, t, pool[drawn[k * users + u]], prefix, prev, starts[u], a);
    }
  }
  t = std::move(out);
}

}  // namespace isim::trace
