// Importer for InferCept's workload JSON (e.g. infercept-mix/merged_exp_uniform.json).
//
// Format: {session_id: [segment, ...]}, sessions kept in file order, ids are the JSON keys.
// A segment is either numeric {prompt_tokens, completion_tokens, api_time, api_token_length} or
// text {prompt, completion, api_token, api_time}. `prompt_tokens` and `prompt` are CUMULATIVE:
// the whole context so far, not the new tokens. Every segment but the last must carry api_time
// (and api_token_length or api_token); on the last one they are optional.
//
// Conversion to Sessions:
// - numeric: input_0 = prompt_tokens[0]; input_k = prompt_tokens[k] - prompt_tokens[k-1] -
//   completion_tokens[k-1], which must equal api_token_length[k-1] and be >= 0;
//   output_k = completion_tokens[k].
// - text: no tokenizer is available offline, so tokens(s) = llround(4 * words(s) / 3), where
//   words counts runs of non-whitespace (ASCII whitespace), using the usual rule of thumb of 4/3
//   tokens per English word. input_0 = tokens(prompt[0]); input_k = tokens(api_token[k-1]),
//   because the cumulative prompt is a plain concatenation whose word counts do not split
//   cleanly at the joins; output_k = tokens(completion[k]).
// - An intercept {kind, api_time} follows segment k when segment k+1 exists. A trailing api_time
//   on the last segment has nothing to return into: it is dropped and counted in the report.
// - Kinds (the file has no labels). Numeric sessions: first prompt_tokens >= 1500 -> `ve`
//   (ALFWorld, ~2000-token few-shot prompt), >= 700 -> `qa`, else `math`; every intercept of the
//   session has that kind. Text sessions, per intercept by its api_token text: starts with
//   "Convert this to text to speech" -> `tts`, "Generate an image about this" -> `image`, any
//   other -> `chat` (a human turn). A text session's own kind (for the report) is its first
//   tts/image intercept's kind, or `chat` if it has none. On infercept-mix this gives six
//   contiguous blocks: 98 math, 65 chat, 50 qa, 65 tts, 54 ve, 65 image.
// - arrival_s = 0 for every session; an arrival process assigns times.
// Errors: InputError `FILE: SESSION_ID: segments[k].FIELD: reason` (or `FILE: reason` for the
// file as a whole).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "traces/session.h"

namespace isim::trace {

struct ImportReport {
  int64_t sessions = 0;
  int64_t segments = 0;
  int64_t intercepts = 0;
  int64_t dropped_trailing_intercepts = 0;
  int64_t text_sessions = 0;
  std::map<std::string, int64_t> sessions_by_kind;
};

Trace import_infercept(const std::string& path, ImportReport* report = nullptr);

// The text-to-token rule above, exposed for tests and other text importers.
int64_t estimate_tokens(const std::string& text);

}  // namespace isim::trace
