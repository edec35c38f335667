// check_profile_loads: for the tools that compute a profile (the analytic roofline, the
// importers), so that every profile they write is one load_profile accepts.
#pragma once

#include <string>

#include "sim/profile.h"

namespace isim::sim {

// Throws InputError("ORIGIN:LINE: key.path: reason") unless load_profile accepts `p` as
// write_profile writes it (LINE: the line in that text): extreme inputs (a time past an hour, a
// KV block past 2 GiB) are then refused by the tool that read them, not when the profile is used.
void check_profile_loads(const Profile& p, const std::string& origin);

}  // namespace isim::sim
