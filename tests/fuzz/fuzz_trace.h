// What the trace harnesses check of a trace a reader returned: the native writer takes it, and
// the native reader reads it back equal (traces/jsonl.h: read(write(t)) == t). start_after is not
// part of the JSONL format and is left out of the comparison.
#pragma once

#include <sstream>

#include "tests/fuzz/fuzz.h"
#include "traces/jsonl.h"

namespace isim::fuzz {

inline void check_trace_round_trip(trace::Trace t) {
  if (t.empty()) return;  // every reader refuses a trace without sessions itself
  for (auto& s : t) {
    s.start_after = {};
    s.shared_prompt = 0;
  }
  std::ostringstream out;
  must_accept("write_jsonl of a trace a reader returned", [&] { trace::write_jsonl(out, t); });
  std::istringstream in(out.str());
  trace::Trace back;
  must_accept("parse_jsonl of what write_jsonl wrote",
              [&] { back = trace::parse_jsonl(in, "round-trip.jsonl"); });
  if (back != t) broken("parse_jsonl(write_jsonl(t)) != t");
}

}  // namespace isim::fuzz
