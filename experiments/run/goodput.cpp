// Goodput (DistServe, OSDI 2024) and overload of a run (experiments/run/goodput.h).
#include "experiments/run/goodput.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::exp {

bool meets_slo(const sim::SessionRecord& r, const RunSlo& slo) {
  if (r.status != "finished") return false;
  for (const auto& [name, limit] : slo) {
    const double x = find_metric(name)->value(r);
    if (x >= 0 && x > limit) return false;  // < 0: undefined for this session
  }
  return true;
}

sim::SloAttainment slo_attainment(const std::vector<sim::SessionRecord>& sessions,
                                  const RunSlo& slo, double busy_window_s) {
  sim::SloAttainment a;
  if (slo.empty()) return a;
  a.limits = slo;
  for (const auto& r : sessions) a.met += meets_slo(r, slo) ? 1 : 0;
  const auto met = static_cast<double>(a.met);
  a.share = sessions.empty() ? 0 : met / static_cast<double>(sessions.size());
  a.per_s = busy_window_s > 0 ? met / busy_window_s : 0;
  return a;
}

double queue_growth(const std::vector<sim::TimeSample>& ts, double from_s, double to_s) {
  double n = 0, st = 0, sq = 0, stt = 0, stq = 0;
  for (const auto& s : ts) {
    if (s.t_s < from_s || s.t_s > to_s) continue;
    const double q = static_cast<double>(s.waiting + s.swapped);
    n += 1;
    st += s.t_s;
    sq += q;
    stt += s.t_s * s.t_s;
    stq += s.t_s * q;
  }
  const double var = n * stt - st * st;
  if (n < 3 || var <= 0) return 0;
  return (n * stq - st * sq) / var;  // sessions per second
}

bool queue_diverges(const std::vector<sim::TimeSample>& ts, double from_s, double to_s, double rate,
                    double fraction) {
  return queue_growth(ts, from_s, to_s) > fraction * rate;
}

Overload judge_overload(const std::vector<sim::SessionRecord>& sessions,
                        const std::vector<sim::TimeSample>& timeseries) {
  Overload o;
  if (sessions.size() < 2) return o;
  double first = sessions.front().arrival_s, last = first;
  for (const auto& r : sessions) {
    first = std::min(first, r.arrival_s);
    last = std::max(last, r.arrival_s);
  }
  if (!(last > first)) return o;
  o.rate = static_cast<double>(sessions.size() - 1) / (last - first);
  o.growth_per_s = queue_growth(timeseries, first + kOverloadWarmup * (last - first), last);
  o.overloaded = o.growth_per_s > kOverloadFraction * o.rate;
  return o;
}

}  // namespace isim::exp
