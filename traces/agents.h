// Agent workloads (trace source `agents`): coding, math (reasoning) and computer-use agent
// sessions whose mix shifts on a schedule of phases.
//
// Contract:
// - An AgentsConfig names session kinds (`kinds:`, a map from any name to its figures) and a
//   schedule (`phases:`). The defaults, traces/generators/agents.yaml, equal
//   default_agents_config(); that file gives each figure's source. A file without `kinds:`
//   takes the default kinds, so a schedule of its own needs only `phases:`.
// - Arrivals: phase p covers [D_p, D_p + duration_s), D_p the sum of the earlier durations.
//   Within it sessions arrive as a Poisson process at rate_p * rate_scale sessions per second
//   (rate 0: an idle phase), and each draws its kind from the phase's mix (weights >= 0, kinds
//   left out weigh 0). generate_agents therefore SETS arrival_s: an experiment replays them with
//   `arrival: {process: replay}` (another process would overwrite the schedule). The phases
//   last at most kMaxSeconds in all, and each session's intercepts are capped so that it ends
//   within kMaxSeconds (traces/limits.h, traces/dist.h: draw_seconds).
// - A session of kind K: segment 0's input is K.system_prompt + a `prompt` draw; it makes a
//   `steps` draw of model calls (at least 1), each decoding an `output` draw; between two calls a
//   tool intercept {tool.kind, a tool.duration_s draw} returns a tool.returned draw of tokens, the
//   next call's input. Token draws below 1 count as 1. The session is then truncated to
//   K.max_context (truncate_to_context, traces/generator.h).
// - Prefix sharing: PrefixHashes with block_tokens per block cover the whole prompt. The first
//   floor(system_prompt / block_tokens) blocks carry hash values of the kind, the same in every
//   session and for every seed; the others carry values drawn for the session, so no two
//   sessions share them. Prefix caching and kv-aware routing can reuse a kind's system prompt.
//   Session::shared_prompt is K.system_prompt (capped by the prompt) for every session whose
//   prompt does not start with its parent's context.
// - Summarisation (K.summarise, off when unset): before a segment k >= 1 whose input would take
//   the context above at_tokens, the harness summarises: segment k carries kReset {tokens =
//   K.system_prompt + a summary_tokens draw (at least 1), shared = K.system_prompt}, and the
//   context continues from there (truncation follows the reset).
// - Subagents (K.subagents, off when unset): at each tool step a uniform draw below `prob` makes
//   the step a wait for subagents instead of a tool: the intercept is {"subagent", a wait_s
//   draw}, and a `count` draw (at least 1) of sessions of kind `kind` start then. Each is
//   "<parent id>/sub-<n>" (n from 0 in the parent), placed after its parent, arriving at the
//   parent's arrival + the parent's intercepts before the step (a lower bound: the parent's
//   own model time is not known here). Segment 0 carries kFork {parent, tokens}: with
//   share_context its prompt is the parent's context at the step (tokens = all of it, capped by
//   the child's max_context) + a prompt draw, and its hashes repeat the parent's whole blocks
//   still at the head of that context; otherwise it is a fresh session of its kind (tokens 0).
//   Its last segment carries kEnd (unless that is segment 0 or carries a reset). Subagents
//   spawn none of their own; each draws from an Rng seeded by one draw of the parent's stream.
//   Steps cut off by truncation spawn nothing.
// - With neither set the draws are exactly those above: traces keep their bytes.
// - Ids are "<kind>-<i>", i counting top-level sessions in arrival order from 0.
// - max_sessions > 0 stops generation after that many top-level sessions (their subagents come
//   with them; the rest of the schedule stays empty); 0 generates all that the schedule yields.
//   A smaller cap gives a prefix of the trace of a larger one. The same config, cap and seed
//   give the same trace on every platform.
// - Bad config: InputError `FILE:LINE: KEY: reason` (`WHERE: KEY: reason` for a config built in
//   code), KEY a path such as `kinds.math.prompt.mean` or `phases[1].mix.coding`; unknown keys
//   list the valid ones, an unknown kind in a mix or in subagents.kind lists the kinds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "traces/dist.h"
#include "traces/generator.h"
#include "traces/session.h"

namespace isim::trace {

// When the harness summarises the context (AgentKind::summarise).
struct SummariseSpec {
  int64_t at_tokens = 0;  // in [system_prompt + 2, max_context)
  Dist summary_tokens;    // the summary's own tokens, after the kept system prompt

  bool operator==(const SummariseSpec&) const = default;
};

// The subagents a tool step may start (AgentKind::subagents).
struct SubagentSpec {
  double prob = 0;             // per tool step, in [0, 1]
  Dist count;                  // subagents started in that step's wait
  std::string kind;            // the kind whose figures they draw (one of the config's kinds)
  bool share_context = false;  // true: their prompt starts with the parent's context
  Dist wait_s;                 // the parent's wait for them (its intercept)

  bool operator==(const SubagentSpec&) const = default;
};

struct AgentKind {
  std::string name;
  int64_t max_context = 2048;  // >= system_prompt + 2
  int64_t system_prompt = 0;   // tokens every session of the kind starts with (shared)
  Dist prompt;                 // the session's own first tokens, after the system prompt
  Dist steps;                  // model calls per session
  Dist output;                 // tokens decoded per call
  InterceptSpec tool;          // between two calls: its kind, duration and returned tokens
  std::optional<SummariseSpec> summarise = {};  // unset: never summarises
  std::optional<SubagentSpec> subagents = {};   // unset: never starts subagents

  bool operator==(const AgentKind&) const = default;
};

struct AgentPhase {
  double duration_s = 0;                            // > 0
  double rate = 0;                                  // sessions per second, >= 0 (before rate_scale)
  std::vector<std::pair<std::string, double>> mix;  // kind name -> weight, in file order

  bool operator==(const AgentPhase&) const = default;
};

struct AgentsConfig {
  int64_t block_tokens = 64;  // tokens per prefix hash
  double rate_scale = 1;      // multiplies every phase's rate (> 0)
  std::vector<AgentKind> kinds;
  std::vector<AgentPhase> phases;

  bool operator==(const AgentsConfig&) const = default;
};

// What generate_agents made of the schedule, for the run's notes.
struct AgentsReport {
  int64_t sessions = 0;                    // all of them, subagents included
  std::map<std::string, int64_t> by_kind;  // top-level sessions
  int64_t subagents = 0;
  int64_t summaries = 0;    // kReset segments, subagents' included
  double schedule_s = 0;    // the phases' total duration
  bool capped = false;      // max_sessions stopped it
  double capped_at_s = 0;   // arrival of the last session when capped
  size_t capped_phase = 0;  // its phase (0-based)
};

AgentsConfig default_agents_config();
AgentsConfig load_agents_config(const std::string& path);
// The semantic checks of load_agents_config on a config built in code; `where` prefixes them.
void validate_agents_config(const AgentsConfig& c, const std::string& where);

Trace generate_agents(const AgentsConfig& c, int64_t max_sessions, uint64_t seed,
                      AgentsReport* report = nullptr);

}  // namespace isim::trace
