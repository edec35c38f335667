// The per-turn parts of summary.json and windows.csv (experiments/run/outputs.h; definitions in
// sim/turn_metrics.h and experiments/run/turn_metrics.h).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "experiments/run/outputs.h"

namespace isim::exp {

namespace {

using Json = nlohmann::ordered_json;

// A value, or null when it is not applicable (< 0).
Json value_or_null(double v) {
  return v < 0 ? Json(nullptr) : Json(v);
}

Json window_json(const sim::WindowStats& w) {
  Json j;
  j["start_s"] = w.start_s;
  j["end_s"] = w.end_s;
  j["turns"] = w.turns;
  j["request_ttft_s"] = {{"p50", value_or_null(w.ttft_p50)},
                         {"p95", value_or_null(w.ttft_p95)},
                         {"p99", value_or_null(w.ttft_p99)},
                         {"mean", value_or_null(w.ttft_mean)}};
  j["itl_max_s"] = {{"p99", value_or_null(w.itl_max_p99)}};
  j["request_latency_s"] = {{"mean", value_or_null(w.request_latency_mean)}};
  j["turn_goodput"] = {{"share", value_or_null(w.goodput_share)}};
  j["output_tokens"] = w.output_tokens;
  return j;
}

std::string csv_cell(double v) {
  return v < 0 ? std::string() : fmt::format("{}", v);
}

}  // namespace

void add_turn_json(nlohmann::ordered_json& j, const sim::Summary& s) {
  j["request_ttft_s"] = stat_json(s.request_ttft);
  j["request_latency_s"] = stat_json(s.request_latency);
  j["itl_max_s"] = stat_json(s.itl_max);
  const auto& g = s.turn_goodput;
  auto v = [&g](auto x) { return g.set ? Json(x) : Json(nullptr); };
  j["turn_goodput"] = {
      {"turns", v(g.turns)}, {"met", v(g.met)}, {"share", v(g.share)}, {"per_s", v(g.per_s)}};
  if (!s.windows.empty()) {
    Json w = Json::array();
    for (const auto& x : s.windows) w.push_back(window_json(x));
    j["windows"] = std::move(w);
  }
  if (!s.recovery_s.empty()) {
    Json r = Json::array();
    double mx = 0;
    bool never = false;
    for (double x : s.recovery_s) {
      r.push_back(value_or_null(x));
      never = never || x < 0;
      mx = std::max(mx, x);
    }
    j["recovery_s"] = std::move(r);
    j["recovery_max_s"] = never ? Json(nullptr) : Json(mx);  // null: a shift never recovered
  }
}

void write_windows_csv(const std::string& path, const sim::Summary& s) {
  std::string text =
      "start_s,end_s,turns,request_ttft_s.mean,request_ttft_s.p50,request_ttft_s.p95,"
      "request_ttft_s.p99,itl_max_s.p99,request_latency_s.mean,turn_goodput.share,"
      "output_tokens\n";
  for (const auto& w : s.windows)
    text += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{}\n", w.start_s, w.end_s, w.turns, csv_cell(w.ttft_mean),
        csv_cell(w.ttft_p50), csv_cell(w.ttft_p95), csv_cell(w.ttft_p99), csv_cell(w.itl_max_p99),
        csv_cell(w.request_latency_mean), csv_cell(w.goodput_share), w.output_tokens);
  write_file_atomic(path, text);
}

}  // namespace isim::exp
