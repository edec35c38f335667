// Importer for the Mooncake (FAST'25) request traces, e.g. ../shared/data/mooncake/
// conversation_trace.jsonl and synthetic_trace.jsonl.
//
// Format: JSONL, one request per line: {"timestamp": ms since the trace start, "input_length":
// tokens, "output_length": tokens, "hash_ids": [id, ...]}. hash_ids[i] names the i-th 512-token
// block of the prompt; equal ids mean a reusable prefix block (the ids are chained: an id also
// implies the blocks before it).
//
// Conversion: each line becomes one single-segment Session, in file order:
// - id "m<LINE>" (1-based line number in the file; blank lines are skipped but counted);
// - arrival_s = timestamp / 1000 (file order is kept even where timestamps go back; the report
//   counts such lines);
// - segment {input_length, output_length}; the engine decodes at least one token, so an
//   output_length of 0 becomes 1 and is counted in MooncakeReport::zero_outputs_raised;
// - prefix = {512, hash_ids}. More hashes than the prompt's ceil(input_length / 512) blocks is an
//   error; fewer is allowed (the tail of the prompt is unique) and is counted.
//
// Errors: InputError `FILE:LINE: FIELD: reason`, FIELD one of timestamp, input_length,
// output_length, hash_ids, hash_ids[i] (`<json>` for a line that is not a JSON object). Checked:
// missing or unknown fields (listing the valid ones), timestamp a finite number >= 0, lengths
// integers (input_length >= 1, output_length >= 0), hash ids integers in [0, 2^64).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "traces/session.h"

namespace isim::trace {

inline constexpr int64_t kMooncakeBlockTokens = 512;

struct MooncakeReport {
  int64_t sessions = 0;
  int64_t zero_outputs_raised = 0;  // output_length 0 -> 1
  int64_t first_zero_output_line = 0;
  int64_t short_hash_lines = 0;  // fewer hash_ids than ceil(input_length / 512)
  int64_t first_short_hash_line = 0;
  int64_t timestamps_going_back = 0;  // lines whose timestamp is below the previous line's

  bool operator==(const MooncakeReport&) const = default;
};

// Throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
Trace import_mooncake(const std::string& path, MooncakeReport* report = nullptr);
// `origin` names the stream in messages (usually the file name).
Trace parse_mooncake(std::istream& in, const std::string& origin, MooncakeReport* report = nullptr);

}  // namespace isim::trace
