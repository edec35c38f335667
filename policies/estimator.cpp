#include "policies/estimator.h"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>
#include <utility>

#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>

#include "sim/oracle.h"
#include "sim/time.h"

namespace isim::policy {

namespace {

class Oracle final : public DurationEstimator {
 public:
  std::string name() const override { return "oracle"; }
  double remaining_s(const std::string&, double) const override {
    throw std::logic_error("the oracle estimator needs the paused session (remaining_for)");
  }
  double remaining_for(const sim::SessionState& s, double elapsed_s) const override {
    return std::max(sim::Oracle::intercept_duration_s(s) - elapsed_s, 0.0);
  }
};

class Elapsed final : public DurationEstimator {
 public:
  std::string name() const override { return "elapsed"; }
  double remaining_s(const std::string&, double elapsed_s) const override {
    return std::max(elapsed_s, 0.0);
  }
};

// Subtree count and sum (nanoseconds) of an order-statistics tree keyed (duration, sequence).
using Key = std::pair<sim::Nanos, int64_t>;
template <class CIt, class It, class Cmp, class Alloc>
struct CountSum {
  using metadata_type = std::pair<int64_t, sim::Nanos>;
  void operator()(It it, CIt end) const {
    auto l = it.get_l_child(), r = it.get_r_child();
    int64_t n = 1;
    sim::Nanos s = (**it).first;
    if (l != end) {
      n += l.get_metadata().first;
      s += l.get_metadata().second;
    }
    if (r != end) {
      n += r.get_metadata().first;
      s += r.get_metadata().second;
    }
    const_cast<metadata_type&>(it.get_metadata()) = {n, s};
  }
  virtual CIt node_begin() const = 0;
  virtual CIt node_end() const = 0;
  virtual ~CountSum() = default;

  // Count and sum of keys with duration > t.
  std::pair<int64_t, sim::Nanos> above(sim::Nanos t) const {
    int64_t n = 0;
    sim::Nanos s = 0;
    for (CIt it = node_begin(); it != node_end();) {
      if ((**it).first > t) {
        n += 1;
        s += (**it).first;
        auto r = it.get_r_child();
        if (r != node_end()) {
          n += r.get_metadata().first;
          s += r.get_metadata().second;
        }
        it = it.get_l_child();
      } else {
        it = it.get_r_child();
      }
    }
    return {n, s};
  }
};
using Tree =
    __gnu_pbds::tree<Key, __gnu_pbds::null_type, std::less<Key>, __gnu_pbds::rb_tree_tag, CountSum>;

class History final : public DurationEstimator {
 public:
  explicit History(int64_t min_samples) : min_samples_(min_samples) {}
  std::string name() const override { return "history"; }

  void observe(const std::string& kind, double duration_s) override {
    Kind& k = kinds_[kind];
    k.tree.insert({sim::from_seconds(duration_s), k.n});
    k.n += 1;
  }

  double remaining_s(const std::string& kind, double elapsed_s) const override {
    const double fallback = std::max(elapsed_s, 0.0);
    auto it = kinds_.find(kind);
    if (it == kinds_.end() || it->second.n < min_samples_) return fallback;
    // Durations strictly longer than the elapsed time.
    const auto [n, sum] = it->second.tree.above(sim::from_seconds(elapsed_s));
    if (n <= 0) return fallback;
    return std::max(sim::to_seconds(sum) / static_cast<double>(n) - elapsed_s, 0.0);
  }

  double p_within(const std::string& kind, double elapsed_s, double horizon_s) const override {
    auto it = kinds_.find(kind);
    if (it == kinds_.end() || it->second.n < min_samples_) return -1;
    const sim::Nanos e = sim::from_seconds(std::max(elapsed_s, 0.0));
    const int64_t longer = it->second.tree.above(e).first;
    if (longer <= 0) return 0;
    const int64_t later =
        it->second.tree.above(e + sim::from_seconds(std::max(horizon_s, 0.0))).first;
    return static_cast<double>(longer - later) / static_cast<double>(longer);
  }

 private:
  struct Kind {
    Tree tree;
    int64_t n = 0;
  };
  int64_t min_samples_;
  std::map<std::string, Kind> kinds_;
};

}  // namespace

const EstimatorRegistry& estimator_registry() {
  static const EstimatorRegistry r = [] {
    EstimatorRegistry reg("estimator");
    reg.add("oracle", "the trace's true remaining intercept time (an upper bound on knowledge)",
            [](const EstimatorOptions&) { return std::make_unique<Oracle>(); });
    reg.add("elapsed", "remaining time = time already elapsed (needs no knowledge)",
            [](const EstimatorOptions&) { return std::make_unique<Elapsed>(); });
    reg.add(
        "history",
        "mean residual life per intercept kind from completed intercepts; elapsed until "
        "enough history",
        [](const EstimatorOptions& o) { return std::make_unique<History>(o.history_min_samples); });
    return reg;
  }();
  return r;
}

}  // namespace isim::policy
