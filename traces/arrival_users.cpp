// The `users` arrival process: a closed loop of concurrent users, each replaying sessions of the
// pool one after another (contract in traces/arrival.h, rules in docs/agent-kv.md).
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/input_error.h"
#include "core/rng.h"
#include "traces/arrival.h"
#include "traces/arrival_copies.h"

namespace isim::trace {

namespace {

constexpr int64_t kMostSessions = 10'000'000;  // users x sessions_per_user
}  // namespace

const double kMostArrivalSeconds = 1e7;
const char* const kMostArrivalSecondsWhy = "10^7 s (116 days): longer than any trace";

namespace {

bool seconds_ok(double s) {
  return std::isfinite(s) && s >= 0;
}
bool fraction_ok(double f) {
  return f >= 0 && f <= 1;
}  // false for NaN too

}  // namespace

std::vector<KnobRow> users_knob_rows() {
  const ArrivalSpec d;
  const std::string most = fmt::format("{}", kMostSessions);
  const auto secs = [](bool open) {
    return (open ? above_upto(0, kMostArrivalSeconds) : in(0, kMostArrivalSeconds)).text();
  };
  return {
      {"users", "-", in(1, static_cast<double>(kMostSessions)).text(),
       "how many users replay sessions at once (users x sessions_per_user <= " + most + ")"},
      {"sessions_per_user", fmt::format("{}", d.sessions_per_user),
       in(1, static_cast<double>(kMostSessions)).text(), "sessions each user runs in turn"},
      {"stagger_s", fmt::format("{}", d.stagger_s), secs(false),
       "first sessions start within [0, stagger_s)"},
      {"max_delay_s", fmt::format("{}", d.max_delay_s), secs(false), "intercept cap (0: none)"},
      {"advance_min", fmt::format("{}", d.advance_min), in(0, 1).text(),
       "fraction of the first session skipped, at least (<= advance_max)"},
      {"advance_max", fmt::format("{}", d.advance_max), in(0, 1).text(),
       "fraction of the first session skipped, at most"},
      {"cycles", fmt::format("{}", d.cycles), in(1, static_cast<double>(kMostCycles)).text(),
       "user-phases: the phases repeat this many times"},
      {"phases[i].duration_s", "-", secs(true), "user-phases: a phase's length"},
  };
}

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
  for (const auto& [key, s] :
       {std::pair<const char*, double>{"stagger_s", a.stagger_s}, {"max_delay_s", a.max_delay_s}})
    if (s > kMostArrivalSeconds)
      return {key, fmt::format("must be <= {} ({}), got {}", kMostArrivalSeconds,
                               kMostArrivalSecondsWhy, s)};
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
  const std::vector<copies::Family> pool = copies::families(t);
  if (pool.empty())
    throw InputError(
        "arrival.process: users needs a session that forks from no other (a root) "
        "in the trace; every session here forks from another");
  const auto users = static_cast<size_t>(a.users),
             per_user = static_cast<size_t>(a.sessions_per_user);
  Rng rng(a.seed);
  const std::vector<size_t> drawn = copies::draws(pool.size(), users * per_user, rng);
  std::vector<copies::Copy> starts(users);
  for (copies::Copy& s : starts) {
    s.first_at_s = a.stagger_s * rng.uniform01();
    s.fraction = a.advance_min + (a.advance_max - a.advance_min) * rng.uniform01();
  }
  const std::vector<size_t> keep =
      a.salt_copies ? copies::kept_blocks(t, pool) : std::vector<size_t>(pool.size(), 0);
  const int width = copies::digits(a.users - 1);
  Trace out;
  for (size_t u = 0; u < users; ++u) {
    copies::Copy c = starts[u];
    c.salt = a.salt_copies;
    for (size_t k = 0; k < per_user; ++k) {
      const size_t f = drawn[k * users + u];
      c.prefix = fmt::format("u{:0{}}/{}/", u, width, k);
      c.key = copies::salt_key(u, k);
      c.keep = keep[f];
      c.prev = copies::append_family(out, t, pool[f], c, a);
    }
  }
  t = std::move(out);
}

}  // namespace isim::trace
