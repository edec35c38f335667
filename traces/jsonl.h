// Native trace format: JSONL, one session per line, keys in this order:
//   {"id":"s1","arrival_s":0.31,"segments":[{"input":392,"output":127,
//     "intercept":{"kind":"math","duration_s":8.6e-5}},{"input":21,"output":47}]}
// and, only for a session whose prefix is set (Session::prefix other than {0, []}), a last key
//   "prefix":{"block_tokens":512,"hashes":[0,1,2]}
// so traces without prefixes keep their bytes.
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
// - Writing is deterministic: same Trace, same bytes. Doubles use the shortest representation
//   that reads back to the same value, so read(write(t)) == t exactly.
#pragma once

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

}  // namespace isim::trace
