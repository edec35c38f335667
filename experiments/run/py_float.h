// A finite double as Python writes it (json.dumps in vLLM's result JSON, prometheus_client's
// bucket bounds): the shortest digits that read back to the same double, and a whole number
// keeps ".0" (2.0, not 2; 1e+20 as fmt writes it). Used by bench.json and OpenMetrics, whose
// readers expect Python's text.
#pragma once

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace isim::exp {

inline void append_py_float(std::string& out, double x) {
  char buf[40];
  const auto end = fmt::format_to_n(buf, sizeof buf - 2, "{}", x).out;
  out.append(buf, end);
  if (std::find_if(buf, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; }) == end)
    out += ".0";
}

inline std::string py_float(double x) {
  std::string s;
  append_py_float(s, x);
  return s;
}

}  // namespace isim::exp
