// ToolWaits: a learned model of tool waits (intercepts), per kind, from the past only: how long
// they last, how many tokens the tool returns, how many the next turn outputs.
//
// Contract:
// - `add_wait(kind, duration_s, returned_tokens)` records an intercept that ended;
//   `add_output(kind, tokens)` a turn that followed an intercept of `kind` and finished. Each
//   kind keeps its last `window` values of each series, and so does the pool of all kinds
//   (bounded memory whatever the run's length).
// - A kind with fewer than `min_samples` values in a series answers from the pool; the pool
//   with fewer than `min_samples` answers the prior below.
// - `p_return(kind, e, h)`: the probability that a wait still going after e seconds ends within
//   (e, e + h]: #{d : e < d <= e + h} / #{d : d > e} over the durations. When no duration
//   exceeds e (a wait longer than any seen) or with too few samples, the prior h / (e + h) (a
//   wait that has lasted e is about as likely to last e more).
// - `returned_tokens(kind)`, `next_output(kind)`: the mean of the series; 0 with too few
//   samples anywhere.
// - Deterministic: equal calls in equal order give equal answers.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace isim::policy::planners {

class ToolWaits {
 public:
  ToolWaits(int32_t window, int32_t min_samples);
  void add_wait(const std::string& kind, double duration_s, int64_t returned_tokens);
  void add_output(const std::string& kind, int64_t tokens);
  double p_return(const std::string& kind, double elapsed_s, double horizon_s) const;
  double returned_tokens(const std::string& kind) const;
  double next_output(const std::string& kind) const;
  int64_t waits_seen() const { return waits_seen_; }

 private:
  struct Series {
    std::deque<double> durations, returned, outputs;
  };
  void push(std::deque<double>& q, double x) const;
  // The kind's series when it has min_samples values, else the pool's; null when neither does.
  const std::deque<double>* pick(const std::string& kind, std::deque<double> Series::*field) const;
  static double mean(const std::deque<double>* q);

  size_t window_;
  size_t min_samples_;
  std::map<std::string, Series> kinds_;
  Series pool_;
  int64_t waits_seen_ = 0;
};

}  // namespace isim::policy::planners
