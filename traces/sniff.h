// Recognizing a trace file's format from its first bytes, to turn a reader's error on a file of
// another format into a hint that names the right one.
//
// Contract:
// - sniff_trace(path) reads at most the first 64 KiB (a directory: the name of its first
//   *.json file) and returns the format whose keys the first record holds (format "" when
//   none matches): jsonl ("segments" and "arrival_s"), dynamo-agentic ("request_id"/"session_id"
//   with "input_length"), mooncake ("timestamp", "input_length", "hash_ids"), tracelab
//   ("round_index"), vllm-requests ("queued_ts"), llmservingsim ("arrival_time_ns"), infercept
//   ("prompt_tokens" in a JSON document), weka-claude-code ("requests" with "block_size", or a
//   directory of such files), and the CSV formats by their header line: azure
//   (TIMESTAMP,ContextTokens,GeneratedTokens) and burstgpt (Timestamp,Model,Request tokens,
//   Response tokens,Total tokens,Log Type). `line` is the 1-based line of the first non-blank
//   line (the recognized record; 0 for a directory or a file without one).
// - with_format_hint(from, path, load) returns load(); when it throws InputError and the file
//   looks like another format G than the one source FROM reads (TraceSource::format: FROM's own
//   name but for mooncake-conversations, which reads mooncake; FROM_NAME below names it), it
//   throws instead
//   "PATH:LINE: not FROM_NAME; it looks like G_NAME: add --from G (in a spec: trace.from: G)".
//   When no format is recognized, the file's first non-blank line does not open JSON, and FROM
//   reads JSON (every reader but azure and burstgpt), it throws "PATH:LINE: not FROM_NAME: its
//   first line, 'TEXT', is neither JSON nor the header of a CSV trace; " + readable_formats(),
//   so a JSON parser's message about a file that is no JSON never reaches the user. Any other
//   error (the file is of the format asked for, or of none recognized) is rethrown.
// - format_name(f) names a format in words ("a native JSONL trace", "an InferCept trace").
#pragma once

#include <cstddef>
#include <string>

#include "core/input_error.h"

namespace isim::trace {

struct Sniffed {
  std::string format;  // a trace source name, "" when not recognized
  size_t line = 0;
  std::string first_line;  // the first non-blank line (no byte-order mark, no CR); "" for none
  bool json = false;       // that line opens a JSON object or array ('{' or '[' first)
};

Sniffed sniff_trace(const std::string& path);
std::string format_name(const std::string& format);
// "--from takes a JSON trace (NAMES) or a CSV one with its header: azure (HEADER), burstgpt
// (HEADER)", the JSON names being every file reader registered (traces/sources.h).
std::string readable_formats();
[[noreturn]] void throw_format_hint(const std::string& from, const std::string& path,
                                    const InputError& original);

template <class Load>
auto with_format_hint(const std::string& from, const std::string& path, Load load) {
  try {
    return load();
  } catch (const InputError& e) {
    throw_format_hint(from, path, e);
  }
}

}  // namespace isim::trace
