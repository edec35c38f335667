#include "traces/sniff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <vector>

#include "traces/azure.h"
#include "traces/burstgpt.h"
#include "traces/csv_rows.h"
#include "traces/sources.h"

namespace isim::trace {

namespace {

constexpr size_t kSniffBytes = 64 * 1024;

// Whether `text` holds "KEY" followed by optional whitespace and a colon (an object key).
bool has_key(const std::string& text, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    size_t i = at + quoted.size();
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i < text.size() && text[i] == ':') return true;
  }
  return false;
}

// The CSV format whose header `line` is; "" for none.
std::string csv_format_of(const std::string& line) {
  if (csv_rows::is_csv_header(line, azure_columns())) return "azure";
  if (csv_rows::is_csv_header(line, burstgpt_columns())) return "burstgpt";
  return "";
}

bool is_csv_format(const std::string& f) {
  return f == "azure" || f == "burstgpt";
}

// The format whose keys `record` holds; "" for none.
std::string format_of(const std::string& r) {
  const auto k = [&](const char* key) { return has_key(r, key); };
  if (k("segments") && k("arrival_s")) return "jsonl";
  if (k("queued_ts")) return "vllm-requests";
  if (k("arrival_time_ns")) return "llmservingsim";
  if (k("round_index") || k("input_tokens_total")) return "tracelab";
  if (k("input_length") && (k("request_id") || k("session_id"))) return "dynamo-agentic";
  if (k("input_length") && k("timestamp")) return "mooncake";
  if (k("requests") && k("block_size")) return "weka-claude-code";
  if (k("prompt_tokens")) return "infercept";
  return "";
}

Sniffed sniff_file(const std::string& path) {
  std::error_code
      ec;  // a FIFO or device is never opened here (it may block): the reader refuses it
  if (!std::filesystem::is_regular_file(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text(kSniffBytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  // The first non-blank line: one record of a JSONL file, or the start of a JSON document
  // printed over many lines (then the whole prefix read is looked at).
  size_t line = 1, begin = 0;
  while (begin < text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const std::string l = text.substr(begin, end - begin);
    const std::string first = csv_rows::without_bom_cr(l);
    if (first.find_first_not_of(" \t\r") != std::string::npos) {
      const std::string csv = csv_format_of(first);
      const size_t opens = first.find_first_not_of(" \t");
      const bool opens_json =
          opens != std::string::npos && (first[opens] == '{' || first[opens] == '[');
      if (!csv.empty()) return {csv, line, first, false};
      const bool opens_document = l.find_first_not_of(" \t\r{[") == std::string::npos;
      return {format_of(opens_document ? text.substr(begin) : l), line, first, opens_json};
    }
    begin = end + 1;
    ++line;
  }
  return {};
}

}  // namespace

Sniffed sniff_trace(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return sniff_file(path);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(path, ec))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  if (files.empty()) return {};
  std::sort(files.begin(), files.end());
  const Sniffed first = sniff_file(files.front());
  return first.format == "weka-claude-code" ? Sniffed{first.format, 0, "", true} : Sniffed{};
}

std::string format_name(const std::string& f) {
  if (f == "jsonl") return "a native JSONL trace";
  if (f == "azure") return "an Azure LLM inference trace";
  if (f == "burstgpt") return "a BurstGPT trace";
  if (f == "dynamo-agentic") return "an NVIDIA Dynamo agentic trace";
  if (f == "infercept") return "an InferCept trace";
  if (f == "llmservingsim") return "an LLMServingSim request dataset";
  if (f == "mooncake") return "a Mooncake trace";
  if (f == "tracelab") return "a TraceLab trace";
  if (f == "vllm-requests") return "a vLLM requests.jsonl";
  if (f == "weka-claude-code") return "a Claude Code (kv-cache-tester) trace";
  return "a '" + f + "' trace";
}

std::string readable_formats() {
  std::string json;
  for (const auto* e : trace_source_registry().entries())
    if (!e->factory()->generated && !is_csv_format(e->name))
      json += (json.empty() ? "" : ", ") + e->name;
  return fmt::format(
      "--from takes a JSON trace ({}) or a CSV one with its header: azure ({}), burstgpt ({})",
      json, csv_rows::csv_header(azure_columns()), csv_rows::csv_header(burstgpt_columns()));
}

void throw_format_hint(const std::string& from, const std::string& path,
                       const InputError& original) {
  // The format `from` reads: a source may read another's files (mooncake-conversations reads
  // Mooncake's), and messages name the file format.
  std::string format = from;
  const auto& sources = trace_source_registry();
  if (sources.contains(from))
    if (const auto src = sources.create(from, "--from"); !src->generated) format = src->format;
  const Sniffed s = sniff_trace(path);
  const std::string where = s.line > 0 ? fmt::format("{}:{}", path, s.line) : path;
  if (s.format.empty() && s.line > 0 && !s.json && !is_csv_format(format))
    throw InputError(fmt::format(
        "{}: not {}: its first line, {}, is neither JSON nor the header "
        "of a CSV trace; {}",
        where, format_name(format), csv_rows::cell_text(s.first_line), readable_formats()));
  if (s.format.empty() || s.format == format) throw original;
  throw InputError(
      fmt::format("{}: not {}; it looks like {}: add --from {} (in a spec: "
                  "trace.from: {})",
                  where, format_name(format), format_name(s.format), s.format, s.format));
}

}  // namespace isim::trace
