// Copies of a trace's families for the closed-loop arrival processes (`users`, `user-phases`):
// internal to traces/arrival_*.cpp. The rules are those of traces/arrival.h `users` and
// docs/agent-kv.md "Closed-loop users"; `salt_copies` is in both.
//
// Contract:
// - families(t): the pool, one Family per root (a session forking from no session of the
//   trace), in trace order; members depth first, children in trace order.
// - draws(n, count, rng): `count` draws of [0, n), each cycle a fresh Fisher-Yates shuffle.
// - kept_blocks(t, pool): per family, how many leading prefix hashes of its root salting keeps
//   (the shared system/tool prefix): floor(shared_prompt / block_tokens) of the root when its
//   source knows shared_prompt (Session::shared_prompt > 0), else the longest run of leading
//   hashes the root has in common with any other root of the pool; never more than it has.
// - salted(hash, key) and salt_key(u, k): a copy's hash past the kept prefix becomes
//   splitmix64(hash ^ salt_key(u, k)), salt_key(u, k) = splitmix64(splitmix64(u) + k)
//   (core/hash.h). Every member of the family salts every hash that is not among its root's
//   kept ones, so a subagent's copy of its parent's blocks matches the parent's copy.
// - append_family appends the copies of family `f` for one user session (ids, forks, start
//   dependencies, advance and the intercept cap as `users` says) and returns the root copy's
//   index in `out`, or -1 when the root is not copied (never: the root is always copied).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "traces/arrival.h"
#include "traces/session.h"

namespace isim::trace::copies {

// members[0] is the root; parent[m] is the position in members of member m's fork parent (-1
// for the root).
struct Family {
  std::vector<size_t> members;
  std::vector<int32_t> parent;
};

std::vector<Family> families(const Trace& t);
std::vector<size_t> draws(size_t n, size_t count, Rng& rng);
std::vector<size_t> kept_blocks(const Trace& t, const std::vector<Family>& pool);
uint64_t salt_key(uint64_t u, uint64_t k);
uint64_t salted(uint64_t hash, uint64_t key);
int digits(int64_t n);

// One user session's copy of a family.
struct Copy {
  std::string prefix;     // prepended to every member's id
  int32_t prev = -1;      // the user's previous root copy in `out` (-1: this is its first)
  double first_at_s = 0;  // the first root copy's arrival
  double fraction = 0;    // the first root copy's skipped share of segments (advance)
  bool salt = false;      // salt_copies
  uint64_t key = 0;       // salt_key(u, k)
  size_t keep = 0;        // kept_blocks of the family
  std::shared_ptr<const ActiveWindows> windows = {};  // on the root copy's StartAfter
};

int32_t append_family(Trace& out, const Trace& t, const Family& f, const Copy& c,
                      const ArrivalSpec& a);

}  // namespace isim::trace::copies
