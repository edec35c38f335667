// Azure LLM inference CSV traces (traces/azure.h: parse_azure), and the native round trip.
#include <sstream>

#include "tests/fuzz/fuzz_trace.h"
#include "traces/azure.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  std::istringstream in(fuzz::bytes(data, size));
  trace::Trace t;
  trace::AzureReport report;
  if (!fuzz::accepted([&] { t = trace::parse_azure(in, "fuzz.csv", &report); })) return 0;
  fuzz::check_trace_round_trip(std::move(t));
  return 0;
}
