// What the profile harnesses check of a profile a reader or an importer returned: write_profile
// emits YAML that load_profile reads back to an equal Profile (sim/profile.h).
#pragma once

#include <sstream>

#include "sim/profile.h"
#include "tests/fuzz/fuzz.h"

namespace isim::fuzz {

inline void check_profile_round_trip(const sim::Profile& p) {
  std::ostringstream out;
  sim::write_profile(out, p);
  sim::Profile back;
  must_accept("parse_profile of what write_profile wrote",
              [&] { back = sim::parse_profile(out.str(), "round-trip.yaml"); });
  if (!(back == p)) broken("parse_profile(write_profile(p)) != p");
}

}  // namespace isim::fuzz
