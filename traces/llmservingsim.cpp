#include "traces/llmservingsim.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "core/input_error.h"
#include "traces/json_lines.h"
#include "traces/jsonl.h"
#include "traces/trace_file.h"

namespace isim::trace {

namespace {

using json = nlohmann::json;
using json_lines::count_field;
using json_lines::fail;
using json_lines::shown;

constexpr const char* kValid =
    "input_toks, output_toks, arrival_time_ns, input_tok_ids, output_tok_ids";

// `key` (input_tok_ids or output_tok_ids): an array of exactly `count` token ids.
std::vector<int64_t> token_ids(const json& obj, const char* key, const char* count_key,
                               int64_t count, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, key, "missing");
  if (!it->is_array()) fail(where, key, "expected an array of token ids, got " + shown(*it));
  if (static_cast<int64_t>(it->size()) != count)
    fail(where, key, fmt::format("{} token ids, but {} is {}", it->size(), count_key, count));
  std::vector<int64_t> ids;
  ids.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_number_unsigned() ||
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(where, fmt::format("{}[{}]", key, i),
           "expected a token id, an integer >= 0, got " + shown(v));
    ids.push_back(static_cast<int64_t>(v.get<uint64_t>()));
  }
  return ids;
}

double arrival_ns(const json& obj, const std::string& where) {
  auto it = obj.find("arrival_time_ns");
  if (it == obj.end()) fail(where, "arrival_time_ns", "missing");
  const std::string problem = json_lines::time_problem(
      *it, "nanoseconds since the trace start, a finite number >= 0", 1e9, "ns");
  if (!problem.empty()) fail(where, "arrival_time_ns", problem);
  return it->get<double>();
}

PrefixHashes block_hashes(const std::vector<int64_t>& ids) {
  PrefixHashes p{kLlmServingSimBlockTokens, {}};
  const std::span<const int64_t> all(ids);
  for (size_t b = 0; b < ids.size(); b += kLlmServingSimBlockTokens)
    p.hashes.push_back(llmservingsim_block_hash(
        all.subspan(b, std::min<size_t>(kLlmServingSimBlockTokens, ids.size() - b))));
  return p;
}

}  // namespace

uint64_t llmservingsim_block_hash(std::span<const int64_t> token_ids) {
  uint64_t h = 0x6c6c6d7365727665ull;  // "llmserve"
  for (int64_t id : token_ids) h = splitmix64(h ^ static_cast<uint64_t>(id));
  return h == 0 ? 1 : h;
}

Trace parse_llmservingsim(std::istream& in, const std::string& origin) {
  Trace t;
  json_lines::for_each_json_line(
      in, origin, [&](const json& j, const std::string& where, int64_t n) {
        if (!j.is_object()) fail(where, "<json>", "expected an object, got " + shown(j));
        for (const auto& [key, value] : j.items())
          if (key != "input_toks" && key != "output_toks" && key != "arrival_time_ns" &&
              key != "input_tok_ids" && key != "output_tok_ids")
            fail(where, key, std::string("unknown field; valid: ") + kValid);
        Session s;
        s.id = fmt::format("bench-{}", n - 1);
        const int64_t input = count_field(j, "input_toks", 1, where);
        const int64_t output = count_field(j, "output_toks", 1, where);
        s.segments.push_back({input, output, {}});
        s.arrival_s = arrival_ns(j, where) / 1e9;
        s.prefix = block_hashes(token_ids(j, "input_tok_ids", "input_toks", input, where));
        // The generated tokens are checked but not used: only prompts are shared across requests.
        if (j.contains("output_tok_ids"))
          token_ids(j, "output_tok_ids", "output_toks", output, where);
        validate_session(s, where);
        t.push_back(std::move(s));
      });
  return t;
}

Trace import_llmservingsim(const std::string& path) {
  std::ifstream in = open_trace_file(path);
  Trace t = parse_llmservingsim(in, path);
  require_sessions(t, path);
  return t;
}

}  // namespace isim::trace
