// The `user-phases` arrival process: closed-loop users per class whose number changes by phase
// (contract in traces/arrival.h; docs/agent-workloads.md "Class workloads and shifting users").
#include "traces/arrival_phases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>

#include "core/input_error.h"
#include "core/rng.h"
#include "traces/arrival_copies.h"

namespace isim::trace {

namespace {

constexpr int64_t kMostPhaseSessions = 10'000'000;  // all users x sessions_per_user

// The classes in the order they first appear in the phases.
std::vector<std::string> phase_classes(const ArrivalSpec& a) {
  std::vector<std::string> out;
  for (const auto& p : a.phases)
    for (const auto& [c, n] : p.users)
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

int64_t users_of(const ArrivalSpec::Phase& p, const std::string& c) {
  for (const auto& [name, n] : p.users)
    if (name == c) return n;
  return 0;
}

// User u of class c's active windows over every cycle, adjacent ones merged.
ActiveWindows windows_of(const ArrivalSpec& a, const std::string& c, int64_t u) {
  ActiveWindows w;
  double at = 0;
  for (int64_t k = 0; k < a.cycles; ++k)
    for (const auto& p : a.phases) {
      if (u < users_of(p, c)) {
        if (!w.spans.empty() && w.spans.back().second == at)
          w.spans.back().second = at + p.duration_s;
        else
          w.spans.push_back({at, at + p.duration_s});
      }
      at += p.duration_s;
    }
  return w;
}

}  // namespace

std::string session_class(const std::string& id) {
  std::string s = id.substr(0, id.find('/'));
  size_t j = s.size();
  while (j > 0 && std::isdigit(static_cast<unsigned char>(s[j - 1]))) --j;
  if (j < s.size() && j > 1 && s[j - 1] == '-') s.resize(j - 1);
  return s;
}

ArrivalProblem phases_problem(const ArrivalSpec& a) {
  if (a.phases.empty())
    return {"phases", "missing (user-phases needs a list of {duration_s, users: {CLASS: N}})"};
  for (size_t i = 0; i < a.phases.size(); ++i) {
    const auto& p = a.phases[i];
    if (!(p.duration_s > 0) || !std::isfinite(p.duration_s))
      return {fmt::format("phases[{}].duration_s", i),
              fmt::format("must be a finite number of seconds > 0, got {}", p.duration_s)};
    if (p.duration_s > kMostArrivalSeconds)
      return {fmt::format("phases[{}].duration_s", i),
              fmt::format("must be <= {} ({}), got {}", kMostArrivalSeconds, kMostArrivalSecondsWhy,
                          p.duration_s)};
    for (const auto& [c, n] : p.users)
      if (n < 0)
        return {fmt::format("phases[{}].users.{}", i, c),
                fmt::format("must be an integer >= 0, got {}", n)};
  }
  if (a.cycles < 1) return {"cycles", fmt::format("must be an integer >= 1, got {}", a.cycles)};
  if (a.cycles > kMostCycles)
    return {"cycles", fmt::format("must be <= {} (each cycle adds a window per phase), got {}",
                                  kMostCycles, a.cycles)};
  ArrivalSpec shared = a;
  shared.users = 1;
  if (ArrivalProblem p = users_problem(shared); !p.key.empty()) return p;
  int64_t users = 0;
  for (const auto& c : phase_classes(a)) {
    int64_t most = 0;
    for (const auto& p : a.phases) most = std::max(most, users_of(p, c));
    users += most;
  }
  if (users > kMostPhaseSessions / a.sessions_per_user)
    return {"phases", fmt::format("the users (the most of each class, summed) x "
                                  "sessions_per_user must be at most {}, got {} x {}",
                                  kMostPhaseSessions, users, a.sessions_per_user)};
  return {};
}

void apply_user_phases(Trace& t, const ArrivalSpec& a) {
  if (const ArrivalProblem p = phases_problem(a); !p.key.empty())
    throw InputError("arrival." + p.key + ": " + p.reason);
  if (t.empty()) return;
  const std::vector<copies::Family> pool = copies::families(t);
  std::map<std::string, std::vector<size_t>> by_class;  // class -> its families, trace order
  for (size_t f = 0; f < pool.size(); ++f)
    by_class[session_class(t[pool[f].members[0]].id)].push_back(f);
  std::string known;
  for (const auto& [c, fs] : by_class) known += (known.empty() ? "" : ", ") + c;
  const std::vector<size_t> keep =
      a.salt_copies ? copies::kept_blocks(t, pool) : std::vector<size_t>(pool.size(), 0);
  const auto per_user = static_cast<size_t>(a.sessions_per_user);
  Rng rng(a.seed);
  struct Class {
    std::string name;
    int64_t users = 0;
    std::vector<size_t> drawn;  // positions in by_class[name]
  };
  std::vector<Class> classes;
  for (const std::string& c : phase_classes(a)) {
    Class k{c, 0, {}};
    for (size_t i = 0; i < a.phases.size(); ++i)
      k.users = std::max(k.users, users_of(a.phases[i], c));
    if (k.users == 0) continue;
    const auto it = by_class.find(c);
    if (it == by_class.end())
      throw InputError(fmt::format(
          "arrival.phases: users of class '{}', but no root session of the trace is of that "
          "class (a root's class is its id less a trailing -<number>; the trace's: {})",
          c, known));
    k.drawn = copies::draws(it->second.size(), static_cast<size_t>(k.users) * per_user, rng);
    classes.push_back(std::move(k));
  }
  Trace out;
  for (const Class& k : classes) {
    const std::vector<size_t>& fams = by_class[k.name];
    const auto users = static_cast<size_t>(k.users);
    std::vector<copies::Copy> starts(users);
    for (copies::Copy& s : starts) {
      s.first_at_s = a.stagger_s * rng.uniform01();
      s.fraction = a.advance_min + (a.advance_max - a.advance_min) * rng.uniform01();
    }
    const int width = copies::digits(k.users - 1);
    for (size_t u = 0; u < users; ++u) {
      copies::Copy c = starts[u];
      auto w =
          std::make_shared<const ActiveWindows>(windows_of(a, k.name, static_cast<int64_t>(u)));
      c.first_at_s = w->next_start(w->spans.front().first + c.first_at_s);
      if (c.first_at_s < 0) continue;  // its stagger passes its last window: it plays nothing
      c.windows = std::move(w);
      c.salt = a.salt_copies;
      for (size_t s = 0; s < per_user; ++s) {
        const size_t f = fams[k.drawn[s * users + u]];
        c.prefix = fmt::format("{}/u{:0{}}/{}/", k.name, u, width, s);
        c.key = copies::salt_key(u, s);
        c.keep = keep[f];
        c.prev = copies::append_family(out, t, pool[f], c, a);
      }
    }
  }
  t = std::move(out);
}

std::vector<PhaseStarts> phase_starts(const ArrivalSpec& a, const Trace& t,
                                      const std::function<double(size_t)>& started_at) {
  std::vector<PhaseStarts> out;
  const std::vector<std::string> classes = phase_classes(a);
  double at = 0;
  for (int64_t k = 0; k < a.cycles; ++k)
    for (size_t p = 0; p < a.phases.size(); ++p) {
      PhaseStarts w{k, static_cast<int64_t>(p), at, at + a.phases[p].duration_s, {}};
      for (const auto& c : classes) w.started.push_back({c, 0});
      out.push_back(std::move(w));
      at += a.phases[p].duration_s;
    }
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].start_after.windows) continue;
    const double s = started_at(i);
    if (s < 0) continue;
    const std::string c = t[i].id.substr(0, t[i].id.find('/'));
    for (PhaseStarts& w : out) {
      if (s < w.begin_s || s >= w.end_s) continue;
      for (auto& [name, n] : w.started)
        if (name == c) ++n;
      break;
    }
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> ran_out(
    const ArrivalSpec& a, const Trace& t, const std::function<double(size_t)>& started_at) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& c : phase_classes(a)) out.push_back({c, 0});
  std::vector<char> followed(t.size(), 0);  // a later root copy of the same user starts after it
  for (const Session& s : t)
    if (s.start_after.windows && s.start_after.session >= 0)
      followed[static_cast<size_t>(s.start_after.session)] = 1;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].start_after.windows || followed[i] || started_at(i) < 0) continue;
    const std::string c = t[i].id.substr(0, t[i].id.find('/'));
    for (auto& [name, n] : out)
      if (name == c) ++n;
  }
  return out;
}

}  // namespace isim::trace
