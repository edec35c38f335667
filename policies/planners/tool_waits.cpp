// The learned tool-wait model (policies/planners/tool_waits.h).
#include "policies/planners/tool_waits.h"

#include <stdexcept>

namespace isim::policy::planners {

ToolWaits::ToolWaits(int32_t window, int32_t min_samples)
    : window_(static_cast<size_t>(window)), min_samples_(static_cast<size_t>(min_samples)) {
  if (window < 1 || min_samples < 1)
    throw std::logic_error("ToolWaits: window and min_samples must be >= 1");
}

void ToolWaits::push(std::deque<double>& q, double x) const {
  q.push_back(x);
  if (q.size() > window_) q.pop_front();
}

void ToolWaits::add_wait(const std::string& kind, double duration_s, int64_t returned_tokens) {
  Series& k = kinds_[kind];
  push(k.durations, duration_s);
  push(pool_.durations, duration_s);
  push(k.returned, static_cast<double>(returned_tokens));
  push(pool_.returned, static_cast<double>(returned_tokens));
  ++waits_seen_;
}

void ToolWaits::add_output(const std::string& kind, int64_t tokens) {
  push(kinds_[kind].outputs, static_cast<double>(tokens));
  push(pool_.outputs, static_cast<double>(tokens));
}

const std::deque<double>* ToolWaits::pick(const std::string& kind,
                                          std::deque<double> Series::*field) const {
  const auto it = kinds_.find(kind);
  if (it != kinds_.end() && (it->second.*field).size() >= min_samples_) return &(it->second.*field);
  if ((pool_.*field).size() >= min_samples_) return &(pool_.*field);
  return nullptr;
}

double ToolWaits::mean(const std::deque<double>* q) {
  if (!q || q->empty()) return 0;
  double sum = 0;
  for (const double x : *q) sum += x;
  return sum / static_cast<double>(q->size());
}

double ToolWaits::p_return(const std::string& kind, double elapsed_s, double horizon_s) const {
  const double prior = horizon_s / (elapsed_s + horizon_s);
  const std::deque<double>* d = pick(kind, &Series::durations);
  if (!d) return prior;
  int64_t alive = 0, ending = 0;
  for (const double x : *d) {
    if (x <= elapsed_s) continue;
    ++alive;
    if (x <= elapsed_s + horizon_s) ++ending;
  }
  return alive > 0 ? static_cast<double>(ending) / static_cast<double>(alive) : prior;
}

double ToolWaits::returned_tokens(const std::string& kind) const {
  return mean(pick(kind, &Series::returned));
}

double ToolWaits::next_output(const std::string& kind) const {
  return mean(pick(kind, &Series::outputs));
}

}  // namespace isim::policy::planners
