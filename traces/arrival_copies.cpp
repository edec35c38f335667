// Copies of a trace's families for the closed-loop arrival processes (traces/arrival_copies.h).
#include "traces/arrival_copies.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "core/hash.h"

namespace isim::trace::copies {

namespace {

bool forks(const Session& s) {
  return !s.segments.empty() && s.segments[0].event.kind == ContextEventKind::kFork;
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

size_t common_lead(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

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

std::vector<size_t> kept_blocks(const Trace& t, const std::vector<Family>& pool) {
  std::vector<size_t> keep(pool.size(), 0);
  // The longest common lead of a chain with any other is that with a neighbour in sorted order.
  std::vector<size_t> order(pool.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto chain = [&](size_t f) -> const std::vector<uint64_t>& {
    return t[pool[f].members[0]].prefix.hashes;
  };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(chain(a), a) < std::make_pair(chain(b), b);
  });
  for (size_t j = 0; j + 1 < order.size(); ++j) {
    const Session &a = t[pool[order[j]].members[0]], &b = t[pool[order[j + 1]].members[0]];
    if (a.prefix.block_tokens != b.prefix.block_tokens) continue;
    const size_t n = common_lead(a.prefix.hashes, b.prefix.hashes);
    keep[order[j]] = std::max(keep[order[j]], n);
    keep[order[j + 1]] = std::max(keep[order[j + 1]], n);
  }
  for (size_t f = 0; f < pool.size(); ++f) {
    const Session& root = t[pool[f].members[0]];
    if (root.shared_prompt > 0 && root.prefix.block_tokens > 0)
      keep[f] = std::min(static_cast<size_t>(root.shared_prompt / root.prefix.block_tokens),
                         root.prefix.hashes.size());
  }
  return keep;
}

uint64_t salt_key(uint64_t u, uint64_t k) {
  return splitmix64(splitmix64(u) + k);
}
uint64_t salted(uint64_t hash, uint64_t key) {
  return splitmix64(hash ^ key);
}

int digits(int64_t n) {
  return n < 10 ? 1 : 1 + digits(n / 10);
}

int32_t append_family(Trace& out, const Trace& t, const Family& f, const Copy& cp,
                      const ArrivalSpec& a) {
  std::unordered_set<uint64_t> kept;  // the root's shared system/tool prefix
  if (cp.salt) {
    const auto& h = t[f.members[0]].prefix.hashes;
    kept.insert(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(std::min(cp.keep, h.size())));
  }
  std::vector<int32_t> at(f.members.size(), -1);  // each member's copy in `out` (-1: dropped)
  size_t cut = 0;                                 // the root's skipped segments (advance)
  for (size_t m = 0; m < f.members.size(); ++m) {
    const Session& src = t[f.members[m]];
    Session c = src;
    c.id = cp.prefix + src.id;
    if (m == 0 && cp.prev < 0) {
      c.arrival_s = cp.first_at_s;
      if (cp.windows) c.start_after = StartAfter{-1, true, 0, cp.windows};
      const auto n = c.segments.size();
      cut = std::min(static_cast<size_t>(cp.fraction * static_cast<double>(n)), n - 1);
      if (cut > 0) advance(c, cut);
    } else if (m == 0) {
      c.start_after = StartAfter{cp.prev, true, 0, cp.windows};
      c.arrival_s = out[static_cast<size_t>(cp.prev)].arrival_s;
    } else {
      const auto p = static_cast<size_t>(f.parent[m]);
      if (at[p] < 0) continue;  // its parent was dropped
      const Session& parent = t[f.members[p]];
      const double delay = moved_offset(parent, std::max(src.arrival_s - parent.arrival_s, 0.0),
                                        p == 0 ? cut : 0, a.max_delay_s);
      if (delay < 0) continue;  // forked in the root's skipped part
      c.segments[0].event.parent = cp.prefix + c.segments[0].event.parent;
      c.start_after = StartAfter{at[p], false, delay};
      c.arrival_s = out[static_cast<size_t>(at[p])].arrival_s + delay;
    }
    cap_intercepts(c, a.max_delay_s);
    if (cp.salt)
      for (uint64_t& h : c.prefix.hashes)
        if (!kept.contains(h)) h = salted(h, cp.key);
    at[m] = static_cast<int32_t>(out.size());
    out.push_back(std::move(c));
  }
  return at[0];
}

}  // namespace isim::trace::copies
