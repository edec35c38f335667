// Dist: a one-dimensional distribution for generators (token counts, calls, durations).
//
// Contract:
// - Families, each clamped to [min, max] after the draw:
//   - `normal` and `lognormal` with the given mean and sd of the values (for a lognormal these
//     are the moments of the values, not of their log; mean > 0);
//   - `exponential` with the given mean (> 0; its sd equals the mean, so `sd` must be 0);
//   - `geometric` on {1, 2, 3, ...}, P(k) = (1 - p)^(k - 1) p with p = 1 / mean (mean >= 1; its
//     sd is implied, so `sd` must be 0).
//   Clamping moves the realised mean when the bounds cut into the distribution.
// - draw_count rounds a draw to the nearest integer (and caps it at 1e15); draw_seconds caps a
//   draw at kMaxSeconds - used_s (traces/limits.h: the limit on a time), where used_s is the
//   session's arrival plus its intercepts so far (summed in order, as a reader sums them), and
//   steps it down until used_s + draw is within the limit in floating point too; so a generated
//   session always fits the limit (found by tests/fuzz twice: intercepts each within the limit
//   added up past it; and a sum that reached 4000000000.0000005 s by rounding).
// - check_time_dist also refuses a time distribution whose mean or min is above kMaxSeconds
//   (found by tests/fuzz: an agents config with a tool duration of mean 8.3e35 s loaded, and its
//   trace could not be written).
// - Every draw uses the project's Rng, so a seed gives the same values everywhere.
// - check_dist throws InputError `WHERE: KEY.FIELD: reason` for a Dist that draw cannot use.
// - read_dist reads the required map `key` of a YAML map as {dist, mean, sd, min, max} (sd may be
//   left out for the families whose sd is implied); errors as core/strict_yaml.h gives them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace isim {
class Rng;
class YamlMap;
}  // namespace isim

namespace isim::trace {

struct Dist {
  std::string dist = "normal";  // normal | lognormal | exponential | geometric
  double mean = 0;
  double sd = 0;
  double min = 0;
  double max = std::numeric_limits<double>::infinity();

  bool operator==(const Dist&) const = default;
};

// Constructors for defaults written in code (generator.cpp, agents.cpp).
inline Dist normal(double mean, double sd, double min = 0,
                   double max = std::numeric_limits<double>::infinity()) {
  return Dist{"normal", mean, sd, min, max};
}
inline Dist lognormal(double mean, double sd, double min = 0,
                      double max = std::numeric_limits<double>::infinity()) {
  return Dist{"lognormal", mean, sd, min, max};
}

// True for the families whose sd follows from the mean (exponential, geometric).
bool sd_is_implied(const std::string& family);

void check_dist(const Dist& d, const std::string& where, const std::string& key);
Dist read_dist(const YamlMap& parent, const std::string& key);
double draw(const Dist& d, Rng& rng);
double draw_seconds(const Dist& d, Rng& rng, double used_s = 0);
void check_time_dist(const Dist& d, const std::string& where, const std::string& key);
int64_t draw_count(const Dist& d, Rng& rng);

}  // namespace isim::trace
