#include "traces/dist.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/rng.h"
#include "core/strict_yaml.h"
#include "traces/limits.h"

namespace isim::trace {

bool sd_is_implied(const std::string& family) {
  return family == "exponential" || family == "geometric";
}

void check_dist(const Dist& d, const std::string& where, const std::string& key) {
  auto fail = [&](const std::string& field, const std::string& reason) {
    throw InputError(where + ": " + key + field + ": " + reason);
  };
  if (d.dist != "normal" && d.dist != "lognormal" && !sd_is_implied(d.dist))
    fail(".dist",
         "unknown distribution '" + d.dist + "'; valid: normal, lognormal, exponential, geometric");
  if (!std::isfinite(d.mean)) fail(".mean", "must be finite");
  if ((d.dist == "lognormal" || d.dist == "exponential") && d.mean <= 0)
    fail(".mean", "must be > 0 for dist " + d.dist);
  if (d.dist == "geometric" && d.mean < 1) fail(".mean", "must be >= 1 for dist geometric");
  if (!std::isfinite(d.sd) || d.sd < 0) fail(".sd", "must be finite and >= 0");
  if (sd_is_implied(d.dist) && d.sd != 0)
    fail(".sd", "is implied by the mean for dist " + d.dist + "; leave it out");
  if (!std::isfinite(d.min) || d.min < 0) fail(".min", "must be finite and >= 0");
  if (std::isnan(d.max) || d.max < d.min) fail(".max", "must be >= min");
}

Dist read_dist(const YamlMap& parent, const std::string& key) {
  const YamlMap m = parent.map(key, {"dist", "mean", "sd", "min", "max"});
  Dist d;
  d.dist = m.get<std::string>("dist", d.dist, "a string");
  d.mean = m.require<double>("mean", "a number");
  if (!sd_is_implied(d.dist) || m.has("sd")) d.sd = m.require<double>("sd", "a number");
  d.min = m.get<double>("min", d.min, "a number");
  d.max = m.get<double>("max", d.max, "a number");
  return d;
}

double draw(const Dist& d, Rng& rng) {
  double x = d.mean;
  if (d.dist == "exponential") {
    x = rng.exponential(d.mean);
  } else if (d.dist == "geometric") {
    // Inversion: the number of Bernoulli(p) trials up to the first success is
    // 1 + floor(log(1 - u) / log(1 - p)); p = 1 (mean 1) always gives 1.
    const double p = 1.0 / d.mean;
    x = p >= 1 ? 1.0 : 1.0 + std::floor(std::log1p(-rng.uniform01()) / std::log1p(-p));
  } else if (d.sd > 0 && d.dist == "lognormal") {
    // Parameters of the underlying normal that give the requested mean and sd of the values.
    const double s2 = std::log1p((d.sd / d.mean) * (d.sd / d.mean));
    x = std::exp(rng.normal(std::log(d.mean) - s2 / 2, std::sqrt(s2)));
  } else if (d.sd > 0) {
    x = rng.normal(d.mean, d.sd);
  }
  return std::clamp(x, d.min, d.max);
}

double draw_seconds(const Dist& d, Rng& rng, double used_s) {
  double x = std::min(draw(d, rng), std::max(0.0, kMaxSeconds - used_s));
  // A reader sums used_s + x in floating point, which may round up past the limit: step x down
  // (a few ulps at most) until that sum is within it too.
  while (x > 0 && used_s + x > kMaxSeconds) x = std::nextafter(x, 0.0);
  return x;
}

void check_time_dist(const Dist& d, const std::string& where, const std::string& key) {
  check_dist(d, where, key);
  const auto limit = [&](const char* field, double v) {
    if (v > kMaxSeconds)
      throw InputError(where + ": " + key + field + ": " +
                       too_many_seconds(fmt::format("{:g}", v)));
  };
  limit(".mean", d.mean);
  limit(".min", d.min);
}

int64_t draw_count(const Dist& d, Rng& rng) {
  return std::llround(std::min(draw(d, rng), static_cast<double>(kMaxTokens)));
}

}  // namespace isim::trace
