// Importer for the Azure LLM inference traces (Azure/AzurePublicDataset, CC-BY-4.0): the 2023
// files (AzureLLMInferenceTrace_{code,conv}.csv, one hour each, in ../shared/data/azure-llm-2023/;
// Splitwise, ISCA 2024) and the 2024 week-long ones (AzureLLMInferenceTrace_{code,conv}_1week.csv;
// DynamoLLM, HPCA 2025), which have the same columns.
//
// Format: CSV, header TIMESTAMP,ContextTokens,GeneratedTokens, one request a row. The 2023 files
// write a TIMESTAMP as "2023-11-16 18:17:03.9799600" (7 fractional digits, no offset, CRLF line
// ends); the 2024 files as "2024-05-10 00:00:00.009930+00:00", or without a fraction,
// "2024-05-12 00:00:00+00:00" (the dataset's 2024 notebook). Any number of fractional digits
// and an optional UTC offset are read (traces/exact_time.h).
//
// Conversion: each row becomes one single-turn session (one segment, no intercept), in file
// order:
// - id "azure-<LINE>" (the 1-based line in the file), so every session is of class "azure"
//   (trace.kinds, user-phases);
// - arrival_s = TIMESTAMP - the first row's TIMESTAMP, in seconds, computed from the digits
//   (exact_time.h); rows must be in non-decreasing time;
// - segment {input: ContextTokens, output: GeneratedTokens}; no prefix hashes (the files carry
//   none, so sessions share no cached prefix);
// - GeneratedTokens 0 becomes 1, counted in AzureReport::zero_outputs_raised: the engine
//   decodes at least one token, and the request's prefill (the cost it did cause) is kept. No
//   such row is in the 2023 files.
// - ContextTokens 0 is refused: a request without a prompt has nothing to prefill and no
//   server accepts one, so it marks a damaged row (none in the 2023 files).
//
// Errors (InputError, exit 2): the header (csv_rows.h), a row of another number of cells,
// "FILE:LINE: ContextTokens: expected an integer >= 1, got 'X'" (GeneratedTokens: >= 0),
// "FILE:LINE: TIMESTAMP: expected a date and time YYYY-MM-DD HH:MM:SS[.DIGITS][Z|+HH:MM|-HH:MM],
// got 'X'" (with the field out of range in parentheses), "FILE:LINE: TIMESTAMP: 'X' is before
// line L's 'Y': rows must be in time order", an arrival past the limit on a time
// (traces/limits.h), and a file without rows.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "traces/session.h"

namespace isim::trace {

// The header of an Azure LLM inference trace.
const std::vector<std::string>& azure_columns();

struct AzureReport {
  int64_t sessions = 0;
  int64_t zero_outputs_raised = 0;  // GeneratedTokens 0 -> 1
  int64_t first_zero_output_line = 0;
  std::string first_timestamp;  // as written: the instant arrivals count from
  double span_s = 0;            // the last arrival

  bool operator==(const AzureReport&) const = default;
};

// Throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
Trace import_azure(const std::string& path, AzureReport* report = nullptr);
// `origin` names the stream in messages (usually the file name).
Trace parse_azure(std::istream& in, const std::string& origin, AzureReport* report = nullptr);

}  // namespace isim::trace
