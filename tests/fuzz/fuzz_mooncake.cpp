// Mooncake request traces (traces/mooncake.h: parse_mooncake), the native round trip, and the
// same requests chained into conversations (traces/conversations.h), which must hold a valid
// trace of every request.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"
#include "traces/conversations.h"
#include "traces/jsonl.h"
#include "traces/mooncake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  std::istringstream in(fuzz::bytes(data, size));
  trace::Trace t;
  trace::MooncakeReport report;
  if (!fuzz::accepted([&] { t = trace::parse_mooncake(in, "fuzz.jsonl", &report); })) return 0;
  trace::ConversationReport rep;
  const trace::Trace conversations = trace::chain_conversations(t, &rep);
  size_t turns = 0;
  for (const trace::Session& s : conversations) {
    fuzz::must_accept("mooncake conversations", [&] { trace::validate_session(s, s.id); });
    turns += s.segments.size();
  }
  if (turns != t.size() || rep.requests != static_cast<int64_t>(t.size()))
    fuzz::broken("mooncake conversations: turns lost or invented");
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
