// Profiles (sim/profile.h: parse_profile on the text), their summary (describe_profile, what
// `isim profile show` prints), and write_profile's output loading back equal.
#include "sim/profile.h"
#include "tests/fuzz/fuzz_profile_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  sim::Profile p;
  if (!fuzz::accepted([&] { p = sim::parse_profile(fuzz::bytes(data, size), "fuzz.yaml"); }))
    return 0;
  (void)sim::describe_profile(p);
  fuzz::check_profile_round_trip(p);
  return 0;
}
