#include "traces/dynamo_agentic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/input_error.h"
#include "traces/dynamo_agentic_row.h"
#include "traces/json_lines.h"
#include "traces/jsonl.h"
#include "traces/trace_file.h"

namespace isim::trace {
namespace {

using json_lines::fail;

constexpr size_t kNone = std::numeric_limits<size_t>::max();

// wait_for and branches as row indices: every id names a row, and wait_for an earlier one.
void resolve(std::vector<DynamoRow>& rows) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < rows.size(); ++i)
    if (auto [it, fresh] = index.emplace(rows[i].id, i); !fresh)
      fail(rows[i].where, "request_id",
           fmt::format("duplicate '{}' (first on line {})", rows[i].id, rows[it->second].line));
  for (size_t i = 0; i < rows.size(); ++i) {
    DynamoRow& r = rows[i];
    for (size_t k = 0; k < r.wait_for.size(); ++k) {
      const std::string field = fmt::format("wait_for[{}]", k);
      auto it = index.find(r.wait_for[k]);
      if (it == index.end()) fail(r.where, field, "no row has request_id '" + r.wait_for[k] + "'");
      if (it->second == i) fail(r.where, field, "a request cannot wait for itself");
      if (it->second > i)
        fail(r.where, field,
             fmt::format("'{}' is on line {}, after this row: a request must come after the "
                         "requests it waits for",
                         r.wait_for[k], rows[it->second].line));
      r.deps.push_back(it->second);
    }
    for (size_t k = 0; k < r.branches.size(); ++k)
      if (!index.contains(r.branches[k]))
        fail(r.where, fmt::format("branches[{}]", k),
             "no row has request_id '" + r.branches[k] + "'");
  }
}

size_t common_prefix(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// end(q): when the first row that waits for q alone started, less its own wait.
std::vector<std::optional<double>> end_estimates(const std::vector<DynamoRow>& rows) {
  std::vector<std::optional<double>> end(rows.size());
  for (const auto& s : rows)
    if (s.t_ms && s.wait_for.size() == 1 && !end[s.deps[0]])
      end[s.deps[0]] = *s.t_ms - s.delay_ms - s.tool_ms;
  return end;
}

class Builder {
 public:
  Builder(const std::vector<DynamoRow>& rows, int64_t block, DynamoAgenticReport& rep)
      : rows_(rows),
        block_(block),
        rep_(rep),
        end_(end_estimates(rows)),
        piece_of_(rows.size(), kNone) {}

  void add(size_t i) {
    const size_t q = continued(i);
    if (q == kNone)
      start(i);
    else
      extend(i, q);
  }

  Trace finish() {
    for (size_t s = 0; s < out_.size(); ++s) {
      Segment& last = out_[s].segments.back();
      if (forked_[s] && !parent_[s] && last.event.kind == ContextEventKind::kNone) {
        last.event.kind = ContextEventKind::kEnd;
        ++rep_.ends;
      }
      validate_session(out_[s], rows_[first_row_[s]].where);
    }
    rep_.sessions = static_cast<int64_t>(out_.size());
    return std::move(out_);
  }

 private:
  struct Piece {
    size_t session;   // index into out_
    size_t last_row;  // the row its last segment came from
  };

  // The row whose piece row i continues: its first wait_for entry that is the last row of a
  // piece of its own session id.
  size_t continued(size_t i) const {
    for (size_t d : rows_[i].deps) {
      const Piece& p = pieces_[piece_of_[d]];
      if (p.last_row == d && rows_[d].session == rows_[i].session) return d;
    }
    return kNone;
  }

  int64_t shared_tokens(const DynamoRow& a, const DynamoRow& b) const {
    return static_cast<int64_t>(common_prefix(a.ids, b.ids)) * block_;
  }

  std::string name_for(const DynamoRow& r) {
    const int64_t n = pieces_by_session_[r.session]++;
    if (n > 0) ++rep_.splits;
    std::string id = n == 0 ? r.session : fmt::format("{}#{}", r.session, n);
    if (auto [it, fresh] = line_of_id_.emplace(id, r.line); !fresh)
      fail(r.where, "session_id",
           fmt::format("the session '{}' this row starts has the same id as the session from "
                       "line {} (later pieces of a session are named <session_id>#<n>)",
                       id, it->second));
    return id;
  }

  void start(size_t i) {
    const DynamoRow& r = rows_[i];
    if (!r.t_ms)
      fail(r.where, "timestamp",
           "missing: this row starts a session (it does not wait for the last request of its "
           "session_id), so it needs its start time");
    Session s{name_for(r), *r.t_ms / 1000.0, {Segment{r.input, r.output, std::nullopt}}, {}};
    const size_t blocks = static_cast<size_t>((r.input + block_ - 1) / block_);
    s.prefix = {block_, {r.ids.begin(), r.ids.begin() + static_cast<std::ptrdiff_t>(blocks)}};
    const bool waits = r.delay_ms > 0 || r.tool_ms > 0 || r.deps.size() > 1;
    if (!r.deps.empty()) fork(i, s);
    if (waits) ++rep_.start_waits_dropped;
    piece_of_[i] = pieces_.size();
    pieces_.push_back({out_.size(), i});
    first_row_.push_back(i);
    forked_.push_back(!r.deps.empty());
    parent_.push_back(false);
    out_.push_back(std::move(s));
  }

  void fork(size_t i, Session& s) {
    const DynamoRow& r = rows_[i];
    const DynamoRow& p = rows_[r.deps[0]];
    const size_t parent = pieces_[piece_of_[r.deps[0]]].session;
    const DynamoRow& first = rows_[first_row_[parent]];
    if (*r.t_ms < *first.t_ms)
      fail(r.where, r.time_field,
           fmt::format("{} ms is before its fork parent '{}' arrives (line {}, {} ms)", *r.t_ms,
                       out_[parent].id, first.line, *first.t_ms));
    s.segments[0].event = {ContextEventKind::kFork,
                           std::min({shared_tokens(r, p), p.input, r.input}), 0, out_[parent].id};
    parent_[parent] = true;
    ++rep_.forks;
  }

  void extend(size_t i, size_t q) {
    const DynamoRow& r = rows_[i];
    const DynamoRow& prev = rows_[q];
    Piece& piece = pieces_[piece_of_[q]];
    Session& s = out_[piece.session];
    s.segments.back().intercept = intercept(i, q);
    Segment seg{0, r.output, std::nullopt};
    const int64_t context = prev.input + prev.output;
    const int64_t shared = shared_tokens(r, prev);
    const bool grew = shared >= prev.input / block_ * block_ && r.input >= context + 1;
    if (!r.prefix_reset && grew) {
      seg.input = r.input - context;
    } else {
      const int64_t kept = std::min({shared, prev.input, r.input - 1});
      seg.event = {ContextEventKind::kReset, kept, kept, ""};
      seg.input = r.input - kept;
      ++(r.prefix_reset                          ? rep_.resets_flagged
         : shared < prev.input / block_ * block_ ? rep_.resets_diverged
                                                 : rep_.resets_shrunk);
    }
    s.segments.push_back(seg);
    piece.last_row = i;
    piece_of_[i] = piece_of_[q];
  }

  Intercept intercept(size_t i, size_t q) {
    const DynamoRow& r = rows_[i];
    const double own_ms = r.delay_ms + r.tool_ms;
    const bool join = std::any_of(r.deps.begin(), r.deps.end(), [&](size_t d) { return d != q; });
    if (!join) return {r.tool_ms > 0 ? "tool" : "delay", own_ms / 1000.0};
    ++rep_.joins;
    const DynamoRow& prev = rows_[q];
    if (!r.t_ms || !prev.t_ms) {
      ++rep_.join_waits_without_times;
      return {"join", own_ms / 1000.0};
    }
    double end = prev.t_ms.value();
    if (end_[q])
      end = *end_[q];
    else
      ++rep_.join_waits_from_start;
    return {"join", std::max(own_ms, *r.t_ms - end) / 1000.0};
  }

  const std::vector<DynamoRow>& rows_;
  const int64_t block_;
  DynamoAgenticReport& rep_;
  const std::vector<std::optional<double>> end_;
  std::vector<size_t> piece_of_;  // row -> its piece
  std::vector<Piece> pieces_;
  std::map<std::string, int64_t> pieces_by_session_;
  std::map<std::string, int64_t> line_of_id_;  // Session id -> the line that started it
  Trace out_;
  std::vector<size_t> first_row_;  // per session
  std::vector<bool> forked_, parent_;
};

}  // namespace

Trace parse_dynamo_agentic(std::istream& in, const std::string& origin, int64_t block_tokens,
                           DynamoAgenticReport* report) {
  if (block_tokens < 1 || block_tokens > kMaxTokens)
    throw InputError(
        fmt::format("{}: block_tokens: must be an integer in [1, {}], got {}", origin, kMaxTokens,
                    block_tokens));
  DynamoAgenticReport rep;
  std::vector<DynamoRow> rows;
  json_lines::for_each_json_line(
      in, origin, [&](const nlohmann::json& j, const std::string& where, int64_t n) {
        rows.push_back(parse_dynamo_row(j, where, n, block_tokens));
        DynamoRow& r = rows.back();
        if (r.output == 0) {
          r.output = 1;
          ++rep.zero_outputs_raised;
        }
        if (static_cast<int64_t>(r.ids.size()) > (r.input + block_tokens - 1) / block_tokens)
          ++rep.extra_hash_rows;
        if (r.dropped) ++rep.dropped_field_rows;
      });
  if (rows.empty()) throw InputError(origin + ": no requests");
  resolve(rows);
  rep.rows = static_cast<int64_t>(rows.size());
  Builder b(rows, block_tokens, rep);
  for (size_t i = 0; i < rows.size(); ++i) b.add(i);
  Trace t = b.finish();
  if (report) *report = rep;
  return t;
}

Trace import_dynamo_agentic(const std::string& path, int64_t block_tokens,
                            DynamoAgenticReport* report) {
  std::ifstream in = open_trace_file(path);
  return parse_dynamo_agentic(in, path, block_tokens, report);
}

}  // namespace isim::trace
