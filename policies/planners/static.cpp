// static: a fixed prefill:decode split, the one the cluster spec's initial roles give. It never
// changes a role; it is the baseline every adaptive planner is measured against (the issue's
// "three static splits"). Parameter: interval_s (default 30, only so that a run records when it
// would have decided; nothing depends on it).
#include "policies/planners.h"
#include "policies/planners/common.h"

namespace isim::policy {

namespace {

class Static final : public cluster::Planner {
 public:
  explicit Static(double interval_s) : interval_s_(interval_s) {}
  std::string name() const override { return "static"; }
  double interval_s() const override { return interval_s_; }
  void observe(const cluster::FleetSnapshot&) override {}
  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext&) override { return {}; }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"interval_s", planners::num(interval_s_)}};
  }

 private:
  double interval_s_;
};

}  // namespace

void add_planner_static(cluster::PlannerRegistry& reg) {
  reg.add("static", "a fixed P:D split, the initial roles; never changes one", [](const Params& p) {
    const double interval = planners::interval_param(p, "interval_s", 30, "seconds between checks");
    p.done("planner 'static'");
    return std::make_unique<Static>(interval);
  });
}

}  // namespace isim::policy
