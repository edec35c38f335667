// Internal to traces/: what the CSV trace readers (traces/azure.h, traces/burstgpt.h) share --
// the header, the row loop, and token counts. Both formats are plain CSV without quoting (no
// cell holds a comma), and their files run to tens of millions of rows, so rows are read one
// line at a time, never the whole file at once.
//
// Contract:
// - csv_header(columns) is the header line: the names joined by commas. is_csv_header(line,
//   columns): `line`, less a UTF-8 byte-order mark and a trailing CR, is that header exactly.
// - for_each_csv_row(in, origin, columns, what, fn) takes the first non-blank line for the
//   header; any other text is InputError "ORIGIN:LINE: expected the header 'HEADER' (WHAT),
//   got 'TEXT'". Then it calls fn(cells, where, line) for every non-blank line after it, with
//   where = "ORIGIN:LINE" and cells the line (less a trailing CR) split at every comma; a line
//   of another number of cells is "ORIGIN:LINE: expected N comma-separated cells (HEADER), got
//   M". A read that fails half-way throws as check_read does (core/input_file.h).
// - count_cell(text, min, where, column) reads a token count written in decimal digits, in
//   [min, kMaxTokens]: "WHERE: COLUMN: expected an integer >= MIN, got 'TEXT'", or the
//   too_many_tokens reason (traces/limits.h).
// - cell_text(text) quotes a cell for a message: 'TEXT', cut to 60 bytes ("..." added) with
//   every byte outside printable ASCII shown as '?'.
// - RowClock keeps rows in time order: advance(at, text, line) returns "" and remembers the row
//   when `at` is not before the previous row's time, else "'TEXT' is before line L's 'PREV':
//   rows must be in time order". first() is the first row's time (valid once started()).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/input_file.h"
#include "traces/exact_time.h"
#include "traces/limits.h"

namespace isim::trace::csv_rows {

inline std::string csv_header(const std::vector<std::string>& columns) {
  std::string h;
  for (const auto& c : columns) h += (h.empty() ? "" : ",") + c;
  return h;
}

inline std::string without_bom_cr(std::string line) {
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

inline bool is_csv_header(const std::string& line, const std::vector<std::string>& columns) {
  return without_bom_cr(line) == csv_header(columns);
}

inline std::string cell_text(const std::string& text) {
  constexpr size_t kShown = 60;
  std::string s;
  for (size_t i = 0; i < text.size() && i < kShown; ++i)
    s += text[i] >= ' ' && text[i] <= '~' ? text[i] : '?';
  return "'" + s + (text.size() > kShown ? "...'" : "'");
}

inline std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  for (char c : line) {
    if (c == ',')
      cells.emplace_back();
    else
      cells.back() += c;
  }
  return cells;
}

inline int64_t count_cell(const std::string& text, int64_t min, const std::string& where,
                          const std::string& column) {
  uint64_t v = 0;
  bool digits = !text.empty() && text.size() <= 19;  // 19 digits fit in uint64
  for (char c : text) {
    digits = digits && c >= '0' && c <= '9';
    if (digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  const std::string prefix = where + ": " + column + ": ";
  if (text.size() > 19 && text.find_first_not_of("0123456789") == std::string::npos)
    throw InputError(prefix + too_many_tokens(cell_text(text)));
  if (!digits || v < static_cast<uint64_t>(min))
    throw InputError(prefix +
                     fmt::format("expected an integer >= {}, got {}", min, cell_text(text)));
  if (v > static_cast<uint64_t>(kMaxTokens))
    throw InputError(prefix + too_many_tokens(cell_text(text)));
  return static_cast<int64_t>(v);
}

class RowClock {
 public:
  std::string advance(const ExactTime& at, const std::string& text, int64_t line) {
    if (started() && before(at, previous_))
      return fmt::format("{} is before line {}'s {}: rows must be in time order", cell_text(text),
                         previous_line_, cell_text(previous_text_));
    if (!started()) first_ = at;
    previous_ = at;
    previous_text_ = text;
    previous_line_ = line;
    return "";
  }
  bool started() const { return previous_line_ > 0; }
  const ExactTime& first() const { return first_; }

 private:
  ExactTime first_, previous_;
  std::string previous_text_;
  int64_t previous_line_ = 0;
};

template <class Fn>
void for_each_csv_row(std::istream& in, const std::string& origin,
                      const std::vector<std::string>& columns, const std::string& what, Fn&& fn) {
  const std::string header = csv_header(columns);
  std::string line;
  int64_t n = 1;
  bool seen_header = false;
  for (; std::getline(in, line); ++n) {
    line = without_bom_cr(std::move(line));
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", origin, n);
    if (!seen_header) {
      if (line != header)
        throw InputError(fmt::format("{}: expected the header '{}' ({}), got {}", where, header,
                                     what, cell_text(line)));
      seen_header = true;
      continue;
    }
    const std::vector<std::string> cells = split_cells(line);
    if (cells.size() != columns.size())
      throw InputError(fmt::format("{}: expected {} comma-separated cells ({}), got {}", where,
                                   columns.size(), header, cells.size()));
    fn(cells, where, n);
  }
  check_read(in, origin, n);
}

}  // namespace isim::trace::csv_rows
