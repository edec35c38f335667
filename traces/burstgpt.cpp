#include "traces/burstgpt.h"

#include <fmt/format.h>

#include <istream>

#include "core/input_error.h"
#include "traces/csv_rows.h"
#include "traces/exact_time.h"
#include "traces/jsonl.h"
#include "traces/trace_file.h"

namespace isim::trace {

namespace {

// The class word of a Model or Log Type cell; "" for a value the README does not list.
std::string model_word(const std::string& model) {
  if (model == "ChatGPT") return "chatgpt";
  if (model == "GPT-4") return "gpt4";
  return "";
}
std::string log_word(const std::string& log) {
  if (log == "Conversation log") return "conv";
  if (log == "API log") return "api";
  return "";
}

void count_class(BurstGptReport& r, const std::string& c) {
  for (auto& [name, n] : r.classes)
    if (name == c) {
      ++n;
      return;
    }
  r.classes.emplace_back(c, 1);
}

}  // namespace

const std::vector<std::string>& burstgpt_columns() {
  static const std::vector<std::string> c = {"Timestamp",       "Model",        "Request tokens",
                                             "Response tokens", "Total tokens", "Log Type"};
  return c;
}

Trace parse_burstgpt(std::istream& in, const std::string& origin, BurstGptReport* report) {
  BurstGptReport r;
  Trace t;
  csv_rows::RowClock clock;
  csv_rows::for_each_csv_row(
      in, origin, burstgpt_columns(), "a BurstGPT trace",
      [&](const std::vector<std::string>& cells, const std::string& where, int64_t n) {
        const auto fail = [&](const char* column, const std::string& reason) {
          throw InputError(fmt::format("{}: {}: {}", where, column, reason));
        };
        ExactTime at;
        if (const std::string why = parse_seconds(cells[0], &at); !why.empty())
          fail("Timestamp", why);
        if (r.rows == 0) r.origin_s = seconds_between(ExactTime{}, at);
        if (const std::string late = clock.advance(at, cells[0], n); !late.empty())
          fail("Timestamp", late);
        ++r.rows;

        const std::string model = model_word(cells[1]);
        if (model.empty())
          fail("Model", "expected ChatGPT or GPT-4, got " + csv_rows::cell_text(cells[1]));
        const int64_t request = csv_rows::count_cell(cells[2], 1, where, "Request tokens");
        const int64_t response = csv_rows::count_cell(cells[3], 0, where, "Response tokens");
        const int64_t total = csv_rows::count_cell(cells[4], 0, where, "Total tokens");
        if (total != request + response)
          fail("Total tokens",
               fmt::format("expected Request tokens + Response tokens = {} + {} = {}, got {}",
                           request, response, request + response, csv_rows::cell_text(cells[4])));
        const std::string log = log_word(cells[5]);
        if (log.empty())
          fail("Log Type",
               "expected 'Conversation log' or 'API log', got " + csv_rows::cell_text(cells[5]));
        if (response == 0) {
          if (r.failed_dropped++ == 0) r.first_failed_line = n;
          return;
        }

        const std::string cls = model + "-" + log;
        Session s;
        s.id = fmt::format("{}-{}", cls, n);
        s.arrival_s = seconds_between(clock.first(), at);
        Segment seg;
        seg.input = request;
        seg.output = response;
        s.segments.push_back(seg);
        validate_session(s, where);
        count_class(r, cls);
        t.push_back(std::move(s));
      });
  r.sessions = static_cast<int64_t>(t.size());
  if (report) *report = r;
  return t;
}

Trace import_burstgpt(const std::string& path, BurstGptReport* report) {
  std::ifstream in = open_trace_file(path);
  BurstGptReport r;
  Trace t = parse_burstgpt(in, path, &r);
  if (r.rows > 0 && r.failed_dropped == r.rows)
    require_sessions(t, path, "every row is a failed request: Response tokens 0");
  require_sessions(t, path, "the file holds no rows: it is empty or has only its header");
  if (report) *report = r;
  return t;
}

}  // namespace isim::trace
