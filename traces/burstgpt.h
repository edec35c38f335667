// Importer for BurstGPT (github.com/HPMLL/BurstGPT, CC-BY-4.0): four months of ChatGPT and
// GPT-4 requests served on Azure (Wang et al., "BurstGPT", arXiv 2401.17644). Its data is not in
// ../shared/data: this reader is built from the columns its README documents, and its tests use
// a fixture written from them (tests/data/burstgpt-excerpt.csv), not rows of the real files.
//
// Format: CSV, header Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type, one
// request a row. Per the README: Timestamp is the request's submission time in seconds from
// 0:00:00 on the trace's first day; Model is ChatGPT or GPT-4; Total tokens is Request tokens
// plus Response tokens; Log Type is "Conversation log" or "API log" (how users called the
// model); a failed request has Response tokens 0 (BurstGPT_without_fails_*.csv leave them out).
//
// Conversion: each row that did not fail becomes one single-turn session, in file order:
// - id "<model>-<log>-<LINE>", model chatgpt or gpt4, log conv or api (1-based LINE in the
//   file): its class (trace.kinds, user-phases) is one of chatgpt-conv, chatgpt-api,
//   gpt4-conv, gpt4-api, so `trace.kinds: [gpt4-conv, gpt4-api]` keeps GPT-4's requests and
//   `[chatgpt-api, gpt4-api]` the API ones (no key of its own: trace.kinds filters already);
// - arrival_s = Timestamp - the first row's Timestamp (a trace, or a cut of one, starts at its
//   first request; the offset dropped is in BurstGptReport::origin_s), exact to the digits
//   (traces/exact_time.h); rows must be in non-decreasing time;
// - segment {input: Request tokens, output: Response tokens}; no prefix hashes.
// - A failed row (Response tokens 0) is dropped and counted: its 0 marks a failure, not a
//   one-token answer, and the README gives no time at which it failed, so the load it caused
//   is unknown; the authors' own "without fails" files drop the same rows. It still sets the
//   origin when it is the first row, and its cells are checked like any other.
// - Request tokens 0 is refused (nothing to prefill; no server accepts an empty prompt).
// - Total tokens must equal Request tokens + Response tokens (the README's definition): a row
//   where it does not is a bad row.
//
// Errors (InputError, exit 2): the header and cell count (csv_rows.h); "FILE:LINE: Timestamp:
// expected seconds, a decimal number >= 0, got 'X'"; "FILE:LINE: Timestamp: 'X' is before line
// L's 'Y': rows must be in time order"; "FILE:LINE: Model: expected ChatGPT or GPT-4, got 'X'";
// "FILE:LINE: Log Type: expected 'Conversation log' or 'API log', got 'X'"; "FILE:LINE: Request
// tokens: expected an integer >= 1, got 'X'" (Response and Total tokens: >= 0); "FILE:LINE:
// Total tokens: expected Request tokens + Response tokens = R + S = T, got 'X'"; and a file
// with no request left ("no sessions (...)").
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "traces/session.h"

namespace isim::trace {

// The header of a BurstGPT trace.
const std::vector<std::string>& burstgpt_columns();

struct BurstGptReport {
  int64_t rows = 0;            // data rows read
  int64_t sessions = 0;        // rows kept
  int64_t failed_dropped = 0;  // Response tokens 0
  int64_t first_failed_line = 0;
  double origin_s = 0;  // the first row's Timestamp: subtracted from every arrival
  std::vector<std::pair<std::string, int64_t>> classes;  // class -> sessions, first seen first

  bool operator==(const BurstGptReport&) const = default;
};

// Throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
Trace import_burstgpt(const std::string& path, BurstGptReport* report = nullptr);
// `origin` names the stream in messages (usually the file name).
Trace parse_burstgpt(std::istream& in, const std::string& origin, BurstGptReport* report = nullptr);

}  // namespace isim::trace
