#include "traces/azure.h"

#include <fmt/format.h>

#include <istream>

#include "core/input_error.h"
#include "traces/csv_rows.h"
#include "traces/exact_time.h"
#include "traces/jsonl.h"
#include "traces/limits.h"
#include "traces/trace_file.h"

namespace isim::trace {

const std::vector<std::string>& azure_columns() {
  static const std::vector<std::string> c = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
  return c;
}

Trace parse_azure(std::istream& in, const std::string& origin, AzureReport* report) {
  AzureReport r;
  Trace t;
  csv_rows::RowClock clock;
  csv_rows::for_each_csv_row(
      in, origin, azure_columns(), "an Azure LLM inference trace",
      [&](const std::vector<std::string>& cells, const std::string& where, int64_t n) {
        ExactTime at;
        const std::string why = parse_date_time(cells[0], &at);
        if (!why.empty()) throw InputError(fmt::format("{}: TIMESTAMP: {}", where, why));
        if (t.empty()) r.first_timestamp = cells[0];
        if (const std::string late = clock.advance(at, cells[0], n); !late.empty())
          throw InputError(fmt::format("{}: TIMESTAMP: {}", where, late));

        Session s;
        s.id = fmt::format("azure-{}", n);
        s.arrival_s = seconds_between(clock.first(), at);
        if (s.arrival_s > kMaxSeconds)
          throw InputError(fmt::format("{}: TIMESTAMP: {} after the first row's {}: {}", where,
                                       csv_rows::cell_text(cells[0]),
                                       csv_rows::cell_text(r.first_timestamp),
                                       too_many_seconds(fmt::format("{} s", s.arrival_s))));
        Segment seg;
        seg.input = csv_rows::count_cell(cells[1], 1, where, "ContextTokens");
        seg.output = csv_rows::count_cell(cells[2], 0, where, "GeneratedTokens");
        if (seg.output == 0) {
          seg.output = 1;
          if (r.zero_outputs_raised++ == 0) r.first_zero_output_line = n;
        }
        s.segments.push_back(seg);
        validate_session(s, where);
        r.span_s = s.arrival_s;
        t.push_back(std::move(s));
      });
  r.sessions = static_cast<int64_t>(t.size());
  if (report) *report = r;
  return t;
}

Trace import_azure(const std::string& path, AzureReport* report) {
  std::ifstream in = open_trace_file(path);
  Trace t = parse_azure(in, path, report);
  require_sessions(t, path, "the file holds no rows: it is empty or has only its header");
  return t;
}

}  // namespace isim::trace
