// Internal to traces/dynamo_agentic.cpp: one row of a Dynamo agentic trace, read and checked on
// its own (the checks that need the other rows, such as wait_for naming an earlier row, are the
// importer's).
//
// Contract: parse_dynamo_row(j, where, line, block) returns the row or throws InputError
// `WHERE: FIELD: reason` for everything traces/dynamo_agentic.h lists as a per-row check.
// Missing session_id becomes "request_<LINE>"; missing input_length becomes hash ids x block;
// delay and tool_wait_ms default to 0. The output is as given (0 stays 0). `dropped` tells
// whether the row had any field the importer drops (request_kind, priority, strict_priority,
// policy_class, output_token_ids, tool_events).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace isim::trace {

struct DynamoRow {
  int64_t line = 0;
  std::string where;    // "FILE:LINE"
  std::string id;       // request_id
  std::string session;  // session_id
  int64_t input = 0, output = 0;
  std::vector<uint64_t> ids;  // hash_ids, as given
  std::optional<double> t_ms;
  double delay_ms = 0, tool_ms = 0;
  bool prefix_reset = false;
  std::vector<std::string> wait_for, branches;
  std::string time_field = "timestamp";  // or "created_time", as written (for messages)
  bool dropped = false;

  std::vector<size_t> deps;  // wait_for as row indices (filled by the importer)
};

DynamoRow parse_dynamo_row(const nlohmann::json& j, const std::string& where, int64_t line,
                           int64_t block);

}  // namespace isim::trace
