// Shard journal lines as JSON (sweep_shards.h has the format). Internal to the sweep shards.
//
// Contract:
// - isim_identity(): "VERSION (GIT_SHA)" of this build; journals record it, and a journal of
//   another build is refused (its results may differ).
// - record_json / parse_record convert a RunRecord; parse_record throws InputError
//   "FILE:LINE: KEY: expected TYPE" for a field that is missing or of the wrong type, and
//   "FILE:LINE: not a journal record (expected a JSON object)" for a line that is not one. A
//   metric that every run writes as a number (summary.json's numbers and flags) must hold one
//   or nothing: "FILE:LINE: metrics.KEY: expected a number (or nothing), as every run writes
//   it, got "fast": ..." (an edited journal, refused on merge and on resume).
// - split_journal: line 1 must be a header object with KIND: 1 ("FILE:1: not an isim sweep
//   shard journal (...)", or plan), each later line ending in '\n' a JSON object (else
//   "FILE:LINE: not a journal record: <parser's reason>"); a last line without '\n' is torn:
//   not parsed, reported in `torn`. A line with a key twice in one object is refused naming both
//   places (core/json_unique.h).
// - check_header_identity: InputError unless the header's "isim" is this build's.
// - read_journal_text: the file's bytes, read by core/input_file.h: InputError "PATH: is a
//   directory; expected a regular file (a journal)" (a FIFO or device likewise), "PATH: cannot
//   open: <reason>", or "PATH:LINE: read error; ..." when a read fails half-way.
// - journal_paths: the journals named, files as given and folders replaced by their files named
//   PREFIX*.jsonl in name order; InputError "DIR: a folder with no PREFIX*.jsonl journals".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/sweep/sweep.h"

namespace isim::exp {

std::string isim_identity();

nlohmann::ordered_json record_json(const RunRecord& r);
RunRecord parse_record(const nlohmann::ordered_json& j, const std::string& file, size_t line);

struct JournalText {
  nlohmann::ordered_json header;
  std::vector<std::pair<size_t, nlohmann::ordered_json>> records;  // 1-based line, record
  bool torn = false;
};
// kind: the header's marker key, "isim_sweep_shard" or "isim_plan_shard".
JournalText split_journal(const std::string& text, const std::string& file,
                          const std::string& kind = "isim_sweep_shard");
void check_header_identity(const nlohmann::ordered_json& header, const std::string& file);
std::string read_journal_text(const std::string& path);
std::vector<std::string> journal_paths(const std::vector<std::string>& paths,
                                       const std::string& prefix);

}  // namespace isim::exp
