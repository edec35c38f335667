#include "policies/estimator.h"

#include <algorithm>

namespace isim::policy {

namespace {

class Oracle final : public DurationEstimator {
 public:
  std::string name() const override { return "oracle"; }
  double remaining_s(const std::string&, double elapsed_s, double true_s) const override {
    return std::max(true_s - elapsed_s, 0.0);
  }
};

class Elapsed final : public DurationEstimator {
 public:
  std::string name() const override { return "elapsed"; }
  double remaining_s(const std::string&, double elapsed_s, double) const override {
    return std::max(elapsed_s, 0.0);
  }
};

// Counts and sums of observed durations, indexed by the rank of the value.
class Fenwick {
 public:
  explicit Fenwick(size_t n) : count_(n + 1, 0), sum_(n + 1, 0.0) {}
  void add(size_t i, double v) {
    for (size_t k = i + 1; k < count_.size(); k += k & (~k + 1)) {
      count_[k] += 1;
      sum_[k] += v;
    }
  }
  // Totals over ranks [0, i).
  void prefix(size_t i, int64_t& n, double& s) const {
    n = 0;
    s = 0;
    for (size_t k = i; k > 0; k -= k & (~k + 1)) {
      n += count_[k];
      s += sum_[k];
    }
  }

 private:
  std::vector<int64_t> count_;
  std::vector<double> sum_;
};

class History final : public DurationEstimator {
 public:
  explicit History(int64_t min_samples) : min_samples_(min_samples) {}
  std::string name() const override { return "history"; }

  void prepare(const std::vector<trace::Intercept>& universe) override {
    std::map<std::string, std::vector<double>> values;
    for (const auto& ic : universe) values[ic.kind].push_back(ic.duration_s);
    for (auto& [kind, v] : values) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      Kind k{v, Fenwick(v.size())};
      kinds_.emplace(kind, std::move(k));
    }
  }

  void observe(const std::string& kind, double duration_s) override {
    auto it = kinds_.find(kind);
    if (it == kinds_.end()) return;  // not in the trace: nothing to learn into
    Kind& k = it->second;
    auto pos = std::lower_bound(k.values.begin(), k.values.end(), duration_s);
    if (pos == k.values.end() || *pos != duration_s) return;
    k.tree.add(static_cast<size_t>(pos - k.values.begin()), duration_s);
    k.n += 1;
    k.sum += duration_s;
  }

  double remaining_s(const std::string& kind, double elapsed_s, double) const override {
    const double fallback = std::max(elapsed_s, 0.0);
    auto it = kinds_.find(kind);
    if (it == kinds_.end() || it->second.n < min_samples_) return fallback;
    const Kind& k = it->second;
    // Durations strictly longer than the elapsed time.
    auto first_longer = std::upper_bound(k.values.begin(), k.values.end(), elapsed_s);
    int64_t n_le;
    double s_le;
    k.tree.prefix(static_cast<size_t>(first_longer - k.values.begin()), n_le, s_le);
    const int64_t n = k.n - n_le;
    if (n <= 0) return fallback;
    return std::max((k.sum - s_le) / static_cast<double>(n) - elapsed_s, 0.0);
  }

 private:
  struct Kind {
    std::vector<double> values;
    Fenwick tree;
    int64_t n = 0;
    double sum = 0;
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
