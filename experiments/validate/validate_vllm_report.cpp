// isim validate --against vllm: the latencies of both sides, their comparison, the table, the
// capacity line and the summary line.
#include "experiments/validate/validate_vllm_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace isim::exp {

namespace {

std::string percent(double e, int decimals = 1) {
  if (std::isinf(e)) return e > 0 ? "+inf" : "-inf";
  return fmt::format("{:+.{}f}%", 100.0 * e, decimals);
}

double error_of(const std::vector<AgainstMetric>& metrics, const std::string& name) {
  for (const auto& m : metrics)
    if (m.metric == name) return m.error();
  return std::nan("");
}

// The figures the acceptance names: TTFT mean/p50/p90, TPOT mean/p50, e2e mean, makespan.
std::string headline(const std::vector<AgainstMetric>& m) {
  auto e = [&](const char* name) { return percent(error_of(m, name)); };
  return fmt::format("TTFT mean {}, p50 {}, p90 {}, TPOT mean {}, p50 {}, e2e mean {}, makespan {}",
                     e("ttft_s.mean"), e("ttft_s.p50"), e("ttft_s.p90"), e("tpot_s.mean"),
                     e("tpot_s.p50"), e("e2e_s.mean"), e("makespan_s"));
}

std::string which(const AgainstReplay& r) {
  if (r.blocks_from == "vllm") return fmt::format("vLLM's {} blocks", grouped(r.gpu_blocks));
  return fmt::format("the {} {} blocks", r.blocks_from, grouped(r.gpu_blocks));
}

}  // namespace

std::vector<Latency> real_latencies(const std::vector<trace::VllmRequest>& requests) {
  std::vector<Latency> out;
  for (const auto& r : requests) {
    Latency l;
    l.id = r.id;
    l.start_s = r.queued_s;
    l.finish_s = r.last_token_s;
    l.ttft_s = r.first_token_s - r.queued_s;
    if (r.output > 1)
      l.tpot_s = (r.last_token_s - r.first_token_s) / static_cast<double>(r.output - 1);
    l.e2e_s = r.last_token_s - r.queued_s;
    l.output = r.output;
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<Latency> sim_latencies(const std::vector<sim::SessionRecord>& sessions) {
  std::vector<Latency> out;
  for (const auto& s : sessions) {
    if (s.status != "finished") continue;
    // The engine's TPOT is (last - first token) over (output - 1) per segment: with one
    // segment, the real side's definition.
    out.push_back({s.id, s.arrival_s, s.finish_s, s.ttft_s, s.tpot_s, s.e2e_s, s.output_tokens});
  }
  return out;
}

double AgainstMetric::error() const {
  if (real == 0) return sim == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), sim);
  return (sim - real) / real;
}

std::vector<std::pair<std::string, double>> latency_metrics(const std::vector<Latency>& l) {
  std::vector<double> ttft, tpot, e2e;
  double first = std::numeric_limits<double>::infinity();
  double last = -first;
  int64_t tokens = 0;
  for (const auto& x : l) {
    ttft.push_back(x.ttft_s);
    if (x.tpot_s >= 0) tpot.push_back(x.tpot_s);
    e2e.push_back(x.e2e_s);
    first = std::min(first, x.start_s);
    last = std::max(last, x.finish_s);
    tokens += x.output;
  }
  const sim::Stat t = sim::make_stat(ttft), p = sim::make_stat(tpot), e = sim::make_stat(e2e);
  const double makespan = l.empty() ? 0 : last - first;
  return {{"ttft_s.mean", t.mean},
          {"ttft_s.p50", t.p50},
          {"ttft_s.p90", t.p90},
          {"ttft_s.p99", t.p99},
          {"tpot_s.mean", p.mean},
          {"tpot_s.p50", p.p50},
          {"tpot_s.p99", p.p99},
          {"e2e_s.mean", e.mean},
          {"e2e_s.p50", e.p50},
          {"e2e_s.p99", e.p99},
          {"throughput_tokens_per_s", makespan > 0 ? static_cast<double>(tokens) / makespan : 0.0},
          {"makespan_s", makespan}};
}

std::vector<AgainstMetric> compare_latencies(const std::vector<Latency>& real,
                                             const std::vector<Latency>& sim) {
  const auto r = latency_metrics(real), s = latency_metrics(sim);
  std::vector<AgainstMetric> out;
  for (size_t i = 0; i < r.size(); ++i) out.push_back({r[i].first, r[i].second, s[i].second});
  return out;
}

std::string against_csv(const std::vector<AgainstMetric>& metrics) {
  std::string out = "metric,real,sim,error\n";
  for (const auto& m : metrics)
    out += fmt::format("{},{},{},{}\n", m.metric, m.real, m.sim, m.error());
  return out;
}

bool at_vllm_blocks(const AgainstReplay& r, std::optional<int64_t> vllm_blocks) {
  return vllm_blocks && (r.blocks_from == "vllm" || r.gpu_blocks == *vllm_blocks);
}

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

double capacity_error(int64_t predicted, int64_t vllm) {
  return static_cast<double>(predicted - vllm) / static_cast<double>(vllm);
}

std::string capacity_line(int64_t predicted, int64_t vllm) {
  return fmt::format("capacity error: {} GPU KV blocks (predicted {} vs vLLM's {})",
                     percent(capacity_error(predicted, vllm), 2), grouped(predicted),
                     grouped(vllm));
}

std::string against_summary(const std::vector<AgainstReplay>& replays,
                            std::optional<int64_t> vllm_blocks) {
  if (replays.empty()) return "no replay";
  const AgainstReplay* latency = nullptr;
  for (const auto& r : replays)
    if (at_vllm_blocks(r, vllm_blocks)) {
      latency = &r;
      break;
    }
  const AgainstReplay& first = replays.front();
  if (!latency)
    return fmt::format(
        "error at {} (latency and capacity together: the run does not state vLLM's block "
        "count): {}",
        which(first), headline(first.metrics));
  std::string out = fmt::format("latency error (at vLLM's {} blocks): {}; ", grouped(*vllm_blocks),
                                headline(latency->metrics));
  out += first.blocks_from == "predicted"
             ? capacity_line(first.gpu_blocks, *vllm_blocks)
             : std::string(
                   "capacity error: not measured (the block count was given, not "
                   "predicted)");
  for (const auto& r : replays)
    if (&r != latency) out += fmt::format("; at {}: {}", which(r), headline(r.metrics));
  return out;
}

std::string against_table(const std::vector<AgainstReplay>& replays, int metric_width) {
  const int w = metric_width;
  std::string head1 = fmt::format("  {:<{}} {:>12}", "metric", w, "real");
  std::string head2 = fmt::format("  {:<{}} {:>12}", "", w, "");
  for (const auto& r : replays) {
    head1 +=
        fmt::format(" {:>16} {:>8}",
                    r.blocks_from == "vllm" ? "sim: vLLM's" : "sim: " + r.blocks_from, "error");
    head2 += fmt::format(" {:>16} {:>8}", grouped(r.gpu_blocks) + " blocks", "");
  }
  head2.erase(head2.find_last_not_of(' ') + 1);
  std::string out = head1 + "\n" + head2 + "\n";
  if (replays.empty()) return out;
  for (size_t i = 0; i < replays.front().metrics.size(); ++i) {
    const AgainstMetric& m = replays.front().metrics[i];
    out += fmt::format("  {:<{}} {:>12.6g}", m.metric, w, m.real);
    for (const auto& r : replays)
      out += fmt::format(" {:>16.6g} {:>8}", r.metrics[i].sim, percent(r.metrics[i].error()));
    out += "\n";
  }
  return out;
}

}  // namespace isim::exp
