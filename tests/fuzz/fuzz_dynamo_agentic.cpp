// NVIDIA Dynamo agentic Mooncake JSONL (traces/dynamo_agentic.h: parse_dynamo_agentic, at the
// default 512 tokens per hash id and at 16), and the native round trip.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"
#include "traces/dynamo_agentic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string text = fuzz::bytes(data, size);
  for (int64_t block : {trace::kDynamoBlockTokens, int64_t{16}}) {
    std::istringstream in(text);
    trace::Trace t;
    trace::DynamoAgenticReport report;
    if (!fuzz::accepted([&] { t = trace::parse_dynamo_agentic(in, "fuzz.jsonl", block, &report); }))
      continue;
    fuzz::check_trace_round_trip(std::move(t));
  }
  return 0;
}
