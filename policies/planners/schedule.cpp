// schedule: a prefill:decode split that follows a schedule given in the spec, for the
// per-phase oracle bound (issue 35): `at_s: "t0, t1, ..."` (simulated seconds, increasing) and
// `prefill: "p0, p1, ..."` (as many counts of prefill replicas): from t_k on, the fleet is
// moved toward p_k prefill replicas, the rest decode.
//
// Contract:
// - It reads no trace and observes nothing: it is an oracle only because the experimenter
//   picks the schedule in hindsight (from the phases of the workload, or from the best static
//   split of each phase). It is a bound, never a baseline a deployment could run.
// - Every `interval_s` (default 1 s) it takes the last k with t_k <= now (none before t0:
//   the initial roles stay) and moves every replica needed at once toward p_k, clamped to
//   [1, n - 1] (planners/common.h step_toward with an unlimited step; switching replicas count
//   by their new role, and one non-switching replica always stays in a role it leaves, so a
//   target may take more than one decision while switches end).
// - Bad lists (not numbers, different lengths, times not increasing or negative, counts < 1)
//   are InputErrors naming the key.
#include <cmath>
#include <sstream>
#include <vector>

#include "policies/planners.h"
#include "policies/planners/common.h"

namespace isim::policy {

namespace {

class Schedule final : public cluster::Planner {
 public:
  Schedule(double interval_s, std::vector<double> at_s, std::vector<int32_t> prefill)
      : interval_s_(interval_s), at_s_(std::move(at_s)), prefill_(std::move(prefill)) {}
  std::string name() const override { return "schedule"; }
  double pull_interval_s() const override { return interval_s_; }
  double interval_s() const override { return interval_s_; }
  void observe(const cluster::FleetSnapshot& s) override { latest_ = s.replicas; }
  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext& c) override {
    const double now = sim::to_seconds(c.now);
    int32_t target = -1;
    for (size_t k = 0; k < at_s_.size() && at_s_[k] <= now; ++k) target = prefill_[k];
    const int32_t n = planners::count_pools(c).total();
    if (target < 0 || n < 2) return {};
    target = std::min(std::max(target, 1), n - 1);
    return planners::step_toward(c, latest_, target, n);
  }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    std::string at, p;
    for (size_t k = 0; k < at_s_.size(); ++k) {
      if (k > 0) {
        at += ' ';
        p += ' ';
      }
      at += planners::num(at_s_[k]);
      p += std::to_string(prefill_[k]);
    }
    return {{"interval_s", planners::num(interval_s_)}, {"at_s", at}, {"prefill", p}};
  }

 private:
  double interval_s_;
  std::vector<double> at_s_;
  std::vector<int32_t> prefill_;
  std::vector<cluster::ReplicaMetrics> latest_;
};

// The bounds on the lists' items: a time of at_s, a count of prefill.
constexpr double kMaxAtS = 1e7, kMaxCount = 65536;

// "a, b, c" (brackets allowed) as numbers; InputError naming the key otherwise.
std::vector<double> number_list(const Params& p, const std::string& key, const char* what) {
  const std::string text =
      p.require<std::string>(key, what, [](const std::string&) { return true; });
  std::string t = text;
  for (char& ch : t)
    if (ch == '[' || ch == ']' || ch == ',') ch = ' ';
  std::istringstream in(t);
  std::vector<double> out;
  std::string word;
  while (in >> word) {
    const auto v = parse_param<double>(word);
    if (!v) p.fail(key, std::string("expected ") + what + ", got '" + text + "'");
    out.push_back(*v);
  }
  if (out.empty()) p.fail(key, std::string("expected ") + what + ", got '" + text + "'");
  return out;
}

}  // namespace

void add_planner_schedule(cluster::PlannerRegistry& reg) {
  reg.add("schedule",
          "oracle bound: prefill counts from given times on (at_s, prefill), chosen in hindsight",
          [](const Params& p) {
            const double interval =
                planners::interval_param(p, "interval_s", 1, "seconds between checks");
            const std::vector<double> at =
                number_list(p, "at_s", "a list of times in seconds, \"0, 600, ...\"");
            const std::vector<double> counts =
                number_list(p, "prefill", "a list of prefill replica counts, \"6, 4, ...\"");
            p.done("planner 'schedule'");
            if (counts.size() != at.size())
              p.fail("prefill", "needs one count per time of at_s (" + std::to_string(at.size()) +
                                    "), got " + std::to_string(counts.size()));
            for (size_t k = 0; k < at.size(); ++k) {
              if (at[k] < 0 || (k > 0 && at[k] <= at[k - 1]) || at[k] > kMaxAtS)
                p.fail("at_s",
                       "times must be increasing, in [0, 10000000] s (10^7 s, 116 days: "
                       "longer than any trace)");
              if (!(counts[k] >= 1 && counts[k] <= kMaxCount) || counts[k] != std::floor(counts[k]))
                p.fail("prefill",
                       "counts must be whole numbers in [1, 65536] (the fleet's "
                       "replica cap)");
            }
            std::vector<int32_t> prefill;
            for (const double c : counts) prefill.push_back(static_cast<int32_t>(c));
            return std::make_unique<Schedule>(interval, at, std::move(prefill));
          });
}

}  // namespace isim::policy
