// Agent-workload configs (traces/agents.h: load_agents_config, which reads a path). A config it
// accepts then generates its first few sessions (max_sessions 3), checked like a read trace.
#include "tests/fuzz/fuzz_trace.h"
#include "traces/agents.h"

namespace {
constexpr size_t kMaxRoundTripSegments = 20000;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("agents.yaml", data, size);
  trace::AgentsConfig c;
  if (!fuzz::accepted([&] { c = trace::load_agents_config(path); })) return 0;
  trace::Trace t;
  trace::AgentsReport report;
  fuzz::must_accept("generate_agents from a config load_agents_config accepted",
                    [&] { t = trace::generate_agents(c, 3, 1, &report); });
  // A valid config can ask for tens of thousands of steps per session (max_context over
  // 2-token steps); their round trip is linear but passes libFuzzer's 5 s under ASan (found as
  // a timeout: 150,000 segments, 0.5 s in Release). Those go through the write and read-back in
  // tests/traces/test_agents.cpp instead.
  size_t segments = 0;
  for (const auto& s : t) segments += s.segments.size();
  if (segments <= kMaxRoundTripSegments) fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
