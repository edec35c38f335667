// A real vLLM run's requests.jsonl (traces/vllm_requests.h: parse_vllm_requests, then
// vllm_requests_to_trace), and the native round trip of the trace.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"
#include "traces/vllm_requests.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  std::istringstream in(fuzz::bytes(data, size));
  trace::Trace t;
  if (!fuzz::accepted([&] {
        t = trace::vllm_requests_to_trace(trace::parse_vllm_requests(in, "fuzz.jsonl"));
      }))
    return 0;
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
