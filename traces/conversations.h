// Conversations rebuilt from a request trace with prefix hashes (Mooncake's hash_ids, issue 39):
// a production trace lists each LLM call on its own; a multi-turn conversation shows only as
// later calls whose prompt extends an earlier one's.
//
// Contract (`chain_conversations`), over single-segment sessions with prefix hashes of one block
// size B, taken in order:
// - A request r continues a conversation c when every full block of c's latest prompt (its
//   first floor(input / B) hashes) is a prefix of r's hashes and r arrives strictly after that
//   prompt: calls at the same instant that share a prefix are parallel calls (one document, many
//   questions), not turns. Of several such conversations r continues the one whose latest
//   prompt has the most full blocks (ties: the earliest conversation). A request no
//   conversation takes starts one. Each conversation is continued by at most one request per
//   latest prompt: once r continues c, c's latest prompt is r's, and a later request that
//   extends only the earlier prompt starts a conversation of its own (counted as a branch).
//   A prompt with no full block can start a conversation but never be continued, and neither
//   can a conversation none of whose first prompt's full blocks is new (no earlier prompt had it
//   in full): a prompt that shares only a system prompt with it does not continue it. Matches
//   count only through such a new block. A request that extends an earlier (not the latest)
//   prompt of a conversation further than any latest prompt is a branch: a new conversation.
// - The session of a conversation: id "c<first request's id>", its first request's arrival and
//   prefix hashes (segment 0's prompt); one segment per request, output the request's output.
// - Turn k + 1's input is what its prompt adds to the conversation's context C after turn k
//   (every input and output so far): input = prompt - C when the prompt is longer. Otherwise the
//   prompt does not hold the whole context (the response was cut, the history trimmed): a reset
//   (ContextEvent kReset) keeps the shared full blocks, shared = min(full blocks x B, prompt - 1),
//   tokens = shared, and the input is prompt - shared (counted in `resets`).
// - Think time: the trace has no response end, so turn k's intercept ("user") lasts from turn
//   k's arrival to turn k + 1's: an upper bound on the user's time, by turn k's own service time.
//   In a simulation the next turn therefore arrives later than in the trace by turn k's
//   simulated latency.
// - A request without prefix hashes has no full block: it starts a conversation of one turn. A
//   request of more than one segment: std::invalid_argument naming it (the importers give one).
#pragma once

#include <cstdint>

#include "traces/session.h"

namespace isim::trace {

struct ConversationReport {
  int64_t requests = 0;
  int64_t conversations = 0;
  int64_t continued = 0;  // requests that continue a conversation (turns after the first)
  int64_t resets = 0;     // of those, prompts shorter than the conversation's context
  int64_t branches = 0;   // requests that extend a prompt already continued by another
  int64_t most_turns = 0;
  bool operator==(const ConversationReport&) const = default;
};

Trace chain_conversations(const Trace& requests, ConversationReport* report = nullptr);

}  // namespace isim::trace
