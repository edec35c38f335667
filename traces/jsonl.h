// Native trace format: JSONL, one session per line, keys in this order:
//   {"id":"s1","arrival_s":0.31,"segments":[{"input":392,"output":127,
//     "intercept":{"kind":"math","duration_s":8.6e-5}},{"input":21,"output":47}]}
// and, only for a session whose prefix is set (Session::prefix other than {0, []}), a last key
//   "prefix":{"block_tokens":512,"hashes":[0,1,2]}
// so traces without prefixes keep their bytes. A segment may carry the agent context signals
// (traces/session.h; docs/agent-kv.md), written after "intercept" and only when present, so
// traces without them keep their bytes too:
//   "context_event": {"kind":"reset","tokens":N,"shared":S} | {"kind":"fork","parent":"ID",
//     "tokens":N} | {"kind":"end"}       (Segment::event other than kNone)
//   "retention": [{"begin":B,"end":E,"priority":P,"duration_s":D}, ...]   (when not empty)
//
// Contract:
// - Reading is strict. Every problem is an InputError `FILE:LINE: FIELD: reason`, where FIELD is
//   a path such as `segments[2].intercept.duration_s` (`<json>` for a line that is not JSON). It
//   covers: not an object, missing fields, wrong types, tokens that are negative or not integers,
//   arrival_s/duration_s negative or not finite, empty segments, empty id, duplicate id (naming
//   the line of the first), empty intercept kind, an intercept on the last segment, and unknown
//   fields (listing the valid ones). Blank lines are skipped but still counted. For `prefix`:
//   block_tokens an integer > 0; hashes integers in [0, 2^64) (`prefix.hashes[3]` names the bad
//   one), at most ceil(segments[0].input / block_tokens) of them.
// - Signals (`segments[k].context_event.tokens`, `segments[k].retention[i].end`, ...): an unknown
//   kind, or a key the kind does not have, is an error listing the valid ones; counts are
//   integers >= 0. A reset only on segments k >= 1, with shared <= tokens and shared <= the
//   context before it; a fork only on segment 0, with tokens <= segments[0].input and a
//   non-empty parent other than the session's own id; an end only on the last segment.
//   Retention ranges: begin < end <= the context after the segment's input (resets counted),
//   priority an integer in 0..100, duration_s finite >= 0, sorted by begin, not overlapping.
// - After all lines are read, each fork's parent must be another session of the trace arriving
//   no later, and no chain of parents may form a cycle (validate_forks; the message names the
//   child's line, for a cycle its first session's, and lists the ids around the cycle).
// - Writing is deterministic: same Trace, same bytes. Doubles use the shortest representation
//   that reads back to the same value, so read(write(t)) == t exactly. The writer refuses (with
//   the reader's checks, `write_jsonl: session I: FIELD: reason`) a trace the reader would.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "traces/session.h"

namespace isim::trace {

// Throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
Trace read_jsonl(const std::string& path);
// `origin` names the stream in messages (usually the file name).
Trace parse_jsonl(std::istream& in, const std::string& origin);

void write_jsonl(std::ostream& os, const Trace& t);
void write_jsonl_file(const std::string& path, const Trace& t);

// The semantic checks on one session (the ones that do not depend on JSON types), for importers
// and generators too. Throws InputError `WHERE: FIELD: reason`.
void validate_session(const Session& s, const std::string& where);

// The trace-level checks: every fork's parent is another session of `t` whose arrival_s is no
// later than the child's, and following parents never comes back to a session (a cycle). Throws
// InputError `WHERE: segments[0].context_event.parent: reason`, WHERE = where(i) for the child
// t[i]. Importers and generators call it on what they make.
void validate_forks(const Trace& t, const std::function<std::string(size_t)>& where);
// Drops the fork event of every session whose parent is no longer in `t` or now arrives after
// it (a cut by trace.limit, a re-timing by an arrival process); returns how many. The session
// then starts unforked: it shares nothing with the parent, which it could not have met.
int64_t drop_broken_forks(Trace& t);

}  // namespace isim::trace
