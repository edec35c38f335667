// Arrival processes: assign each session's arrival_s. Each process is registered by name.
//
// Contract:
// - `poisson`: sessions keep their order; gaps between arrivals are exponential with mean
//   1/rate, and the first session arrives at the first gap (not at 0). Same seed, same times, on
//   every platform (core/rng.h). A forked session (traces/session.h kFork) whose parent comes
//   before it keeps its offset from the parent (max(0, its arrival - the parent's) before
//   re-timing) and draws no gap: a subagent still starts while its parent waits for it. So a
//   trace without forks gets exactly the times it always did.
// - `replay`: arrival_s stays as the trace has it; sessions are not reordered.
// - `users` (closed loop, as kv-cache-tester's trace_replay_tester.py --recycle): `users` users
//   each replay `sessions_per_user` sessions in a row, drawn from the trace's pool. The pool is
//   its roots (sessions that fork from no session of the trace) with their subagents (sessions
//   forking from them, recursively). The draws: a seeded permutation of the roots, cycled (each
//   root once before any repeats, reshuffled each cycle); user u's k-th session is draw
//   k * users + u. The trace becomes, user by user and k by k, a copy of the drawn root with id
//   `u<u>/<k>/<its id>` (u zero-padded to the width of users - 1) and copies of its subagents
//   (depth first, children in trace order) renamed the same way, their fork parents too. Start
//   dependencies (trace::StartAfter) make it closed loop: user u's first root copy arrives at a
//   seeded offset in [0, stagger_s); each later one when the user's previous root copy
//   finishes; each subagent copy max(0, its arrival_s - its parent's) after its parent copy
//   arrives, less what the cap and advance removed from the parent's intercepts before that
//   offset (on the trace's intercept-only timeline of the parent). Every intercept is capped at
//   max_delay_s (0: no cap; the tester's --max-delay).
//   A user's first session starts partway (the tester's --advance-min/--advance-max): the
//   first floor(f * segments) segments (at most all but one), f seeded uniform in [advance_min,
//   advance_max], are dropped and the first kept segment's input carries the context so far
//   (docs/agent-kv.md "Closed-loop users" has the rules for signals, prefix hashes and
//   subagents). Seeded draws, in order: the cycles' shuffles (Fisher-Yates from the top), then
//   per user its offset and its f. max_delay_s and the advance fractions default to the
//   tester's values (60 s, 0).
//   salt_copies (default false): every copy's prefix hashes past its root's shared system/tool
//   prefix are salted per user session (traces/arrival_copies.h has the rule), so copies of one
//   root share that prefix and nothing more; false keeps every hash as the trace has it.
// - `user-phases` (traces/arrival_phases.cpp; docs/agent-workloads.md): closed-loop users per
//   class whose number changes by phase. A root's class is session_class(its id). `phases`
//   (repeated `cycles` times) give each a duration and users per class; user u of class c is
//   active in the phases where u < users[c]. Each user replays its class's roots as `users`
//   does (sessions_per_user of them at most; seeded draws: every class's shuffles, classes in
//   the order they first appear in the phases, then class by class and user by user its offset
//   and its advance fraction), but a session
//   only starts inside an active window (trace::ActiveWindows): its first at the first instant
//   in a window at or after its first window's start + its stagger offset, each later one when
//   its previous finishes, or at its next window's start; with no window left it and the
//   user's later ones are never started. Ids: `<class>/u<u>/<k>/<id>`. salt_copies, stagger_s,
//   max_delay_s and the advance fractions act as for `users`. Bad values: InputError naming
//   `arrival.phases[i].KEY`, `arrival.cycles` or the `users` key (phases_problem).
// The other processes ignore these keys, as all but poisson ignore
//   `rate`. A bad value is an InputError naming `arrival.KEY` (users_problem); so is a
//   non-empty trace without a root (`arrival.process`). An empty trace stays empty.
// - arrival_registry() lists each process with a one-line description (`isim list` prints
//   them). An unknown process or a rate that is not a finite number > 0 is an InputError naming
//   `arrival.process` or `arrival.rate` and what is valid.
// Adding a process: one function in arrival.cpp (or a file of its own, as users has) and one
// registration line there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/knobs.h"
#include "core/registry.h"
#include "traces/session.h"

namespace isim::trace {

struct ArrivalSpec {
  std::string process = "poisson";
  double rate = 1.0;  // sessions per second (poisson only)
  uint64_t seed = 1;
  // users only.
  int64_t users = 0;  // concurrent users (>= 1; 0: not given)
  int64_t sessions_per_user = 2;
  double stagger_s = 60;                    // first sessions start within [0, stagger_s)
  double max_delay_s = 60;                  // intercept cap (0: none)
  double advance_min = 0, advance_max = 0;  // fractions of the first session skipped
  bool salt_copies = false;                 // users, user-phases: salt past the shared prefix
  // user-phases only.
  struct Phase {
    double duration_s = 0;                               // > 0
    std::vector<std::pair<std::string, int64_t>> users;  // class -> users (>= 0), file order
  };
  std::vector<Phase> phases = {};  // the initializer keeps `ArrivalSpec{process, rate, seed}` quiet
  int64_t cycles = 1;              // the phases repeat this many times (>= 1)
};

// The class of a session (user-phases, trace.kinds): its id up to the first '/', less a
// trailing "-<digits>" (the agents source names sessions "<kind>-<i>"): "computer-use-12/sub-0"
// is of class "computer-use", "trace_0002" of class "trace_0002".
std::string session_class(const std::string& id);

// The first bad `users` setting of `a` (whatever its process), as {key under arrival, reason};
// key "" when all are valid. One rule for the experiment reader and the process itself.
struct ArrivalProblem {
  std::string key, reason;
};
ArrivalProblem users_problem(const ArrivalSpec& a);
// Upper ends (issue 36): stagger_s, max_delay_s and each phase's duration_s are at most
// kMostArrivalSeconds ("must be <= 10000000 (10^7 s (116 days): longer than any trace), got X");
// cycles at most kMostCycles. users and sessions_per_user are bounded by their product's cap.
extern const double kMostArrivalSeconds;
extern const char* const kMostArrivalSecondsWhy;
inline constexpr int64_t kMostCycles = 100000;
// The same for user-phases: the phases and cycles, then the keys it shares with users (key
// "phases[i].duration_s", "phases[i].users.CLASS", "phases", "cycles" or a users key).
ArrivalProblem phases_problem(const ArrivalSpec& a);

// The users and user-phases keys as `isim list` shows them (key, default, bound, help), their
// bounds the constants users_problem and phases_problem check.
std::vector<KnobRow> users_knob_rows();

// The users process (arrival_users.cpp); callers go through apply_arrivals.
void apply_users(Trace& t, const ArrivalSpec& a);
void apply_user_phases(Trace& t, const ArrivalSpec& a);  // arrival_phases.cpp

struct ArrivalProcess {
  std::function<void(Trace&, const ArrivalSpec&)> apply;
};

using ArrivalRegistry = Registry<ArrivalProcess>;
const ArrivalRegistry& arrival_registry();

void apply_arrivals(Trace& t, const ArrivalSpec& a);

}  // namespace isim::trace
