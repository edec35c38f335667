// Importer for the per-request log of a real vLLM run: requests.jsonl as LLMServingSim's vLLM
// benchmark writes it (e.g. ../shared/data/llmservingsim/vllm-RTX4090-llama-3.1-8b/).
//
// Format: JSONL, one finished request per line: {"request_id", "input_toks", "output_toks",
// "arrival_time" (wall-clock epoch, not on the other timestamps' clock; optional, ignored),
// "queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts"} -- the four timestamps are
// seconds on one monotonic clock of the server.
//
// Conversion (to_trace): one single-segment Session per request, in file order: id =
// request_id, arrival_s = queued_ts - min(queued_ts over the file), segment {input_toks,
// output_toks}, no prefix hashes (the log has no token ids).
//
// Errors: InputError `FILE:LINE: FIELD: reason` (`<json>` for a line that is not a JSON
// object). Checked: missing and unknown fields (listing the valid ones), request_id a non-empty
// string not used by an earlier line (naming it), input_toks an integer >= 1, output_toks an
// integer >= 1, timestamps finite numbers with queued_ts <= scheduled_ts <= first_token_ts <=
// last_token_ts; a file without any request is an error too.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "traces/session.h"

namespace isim::trace {

struct VllmRequest {
  std::string id;
  int64_t line = 0;  // 1-based line in the file
  int64_t input = 0, output = 0;
  double queued_s = 0, scheduled_s = 0, first_token_s = 0, last_token_s = 0;
};

// Throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
std::vector<VllmRequest> read_vllm_requests(const std::string& path);
// `origin` names the stream in messages (usually the file name).
std::vector<VllmRequest> parse_vllm_requests(std::istream& in, const std::string& origin);

Trace vllm_requests_to_trace(const std::vector<VllmRequest>& requests);
Trace import_vllm_requests(const std::string& path);

}  // namespace isim::trace
