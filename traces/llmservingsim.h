// Importer for LLMServingSim's request datasets, e.g. ../shared/data/llmservingsim/
// sharegpt-llama-3.1-8b-300-sps10.jsonl (the workload its vLLM benchmark replays).
//
// Format: JSONL, one request per line: {"input_toks": prompt tokens, "output_toks": tokens to
// decode, "arrival_time_ns": arrival in ns since the trace start, "input_tok_ids": [token id,
// ...] (the prompt, input_toks ids), optionally "output_tok_ids": [...] (what the model generated
// when the dataset was made, output_toks ids; checked, not used)}.
//
// Conversion: each line becomes one single-segment Session, in file order:
// - id "bench-<N>", N the 0-based line index in the file (blank lines are skipped but counted):
//   the name LLMServingSim's vLLM benchmark gives the request, so a run's requests.jsonl joins
//   this file by id;
// - arrival_s = arrival_time_ns / 1e9 (file order is kept even where arrivals go back);
// - segment {input_toks, output_toks};
// - prefix = {16, one hash per 16-token block of the prompt, the last block possibly partial}.
//   A block's hash is llmservingsim_block_hash of its own token ids only; the engine chains
//   blocks by position (sim::prefix_chain), so equal prompts share equal chains.
//
// Errors: InputError `FILE:LINE: FIELD: reason`, FIELD one of input_toks, output_toks,
// arrival_time_ns, input_tok_ids, input_tok_ids[i], output_tok_ids, output_tok_ids[i] (`<json>`
// for a line that is not a JSON object). Checked: missing or unknown fields (listing the valid
// ones), input_toks and output_toks integers >= 1, arrival_time_ns a finite number >= 0,
// input_tok_ids (and output_tok_ids when present) an array of exactly input_toks (output_toks)
// integers >= 0.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>

#include "traces/session.h"

namespace isim::trace {

inline constexpr int64_t kLlmServingSimBlockTokens = 16;

// Content hash of one block's token ids: splitmix64 folded over the ids in order, from a fixed
// seed. Pure and platform-independent; never 0 for a non-empty block.
uint64_t llmservingsim_block_hash(std::span<const int64_t> token_ids);

// Throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
Trace import_llmservingsim(const std::string& path);
// `origin` names the stream in messages (usually the file name).
Trace parse_llmservingsim(std::istream& in, const std::string& origin);

}  // namespace isim::trace
