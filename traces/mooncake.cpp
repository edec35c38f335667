#include "traces/mooncake.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "traces/json_lines.h"
#include "traces/jsonl.h"
#include "traces/trace_file.h"

namespace isim::trace {
namespace {

using json = nlohmann::json;
using json_lines::count_field;
using json_lines::fail;
using json_lines::require;
using json_lines::shown;

}  // namespace

Trace parse_mooncake(std::istream& in, const std::string& origin, MooncakeReport* report) {
  MooncakeReport r;
  Trace t;
  double previous_ms = -1;
  json_lines::for_each_json_line(
      in, origin, [&](const json& j, const std::string& where, int64_t n) {
        if (!j.is_object()) fail(where, "<json>", "expected an object, got " + shown(j));
        for (const auto& [key, value] : j.items())
          if (key != "timestamp" && key != "input_length" && key != "output_length" &&
              key != "hash_ids")
            fail(where, key,
                 "unknown field; valid: timestamp, input_length, output_length, hash_ids");

        const json& ts = require(j, "timestamp", where);
        const std::string late =
            json_lines::time_problem(ts, "milliseconds, a finite number >= 0", 1000, "ms");
        if (!late.empty()) fail(where, "timestamp", late);
        const double ms = ts.get<double>();
        if (ms < previous_ms) ++r.timestamps_going_back;
        previous_ms = ms;

        Session s;
        s.id = fmt::format("m{}", n);
        s.arrival_s = ms / 1000.0;
        Segment seg;
        seg.input = count_field(j, "input_length", 1, where);
        seg.output = count_field(j, "output_length", 0, where);
        if (seg.output == 0) {
          seg.output = 1;
          if (r.zero_outputs_raised++ == 0) r.first_zero_output_line = n;
        }
        s.segments.push_back(seg);

        const json& ids = require(j, "hash_ids", where);
        if (!ids.is_array())
          fail(where, "hash_ids", "expected an array of non-negative integers, got " + shown(ids));
        const int64_t blocks = (seg.input + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
        if (static_cast<int64_t>(ids.size()) > blocks)
          fail(where, fmt::format("hash_ids[{}]", blocks),
               fmt::format("{} hash ids but input_length {} has only ceil({} / {}) = {} blocks",
                           ids.size(), seg.input, seg.input, kMooncakeBlockTokens, blocks));
        if (static_cast<int64_t>(ids.size()) < blocks && r.short_hash_lines++ == 0)
          r.first_short_hash_line = n;
        s.prefix.block_tokens = kMooncakeBlockTokens;
        s.prefix.hashes.reserve(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) {
          if (!ids[i].is_number_unsigned())
            fail(where, fmt::format("hash_ids[{}]", i),
                 "expected a non-negative integer below 2^64, got " + shown(ids[i]));
          s.prefix.hashes.push_back(ids[i].get<uint64_t>());
        }
        validate_session(s, where);
        t.push_back(std::move(s));
      });
  r.sessions = static_cast<int64_t>(t.size());
  if (report) *report = r;
  return t;
}

Trace import_mooncake(const std::string& path, MooncakeReport* report) {
  std::ifstream in = open_trace_file(path);
  Trace t = parse_mooncake(in, path, report);
  require_sessions(t, path);
  return t;
}

}  // namespace isim::trace
