// AIPerf's profile_export.jsonl and profile_export_aiperf.json as a BenchRun (against_aiperf.h).
#include "experiments/validate/against_aiperf.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/validate/against_json.h"

namespace isim::exp {

namespace fs = std::filesystem;
using bench_json::json;

namespace {

struct AiperfRecord {
  std::string conversation;
  int64_t turn = 0, start_ns = 0;
  RequestRow row;
};

// Seconds per unit of an AIPerf time metric.
double seconds_per(const std::string& unit, const std::string& where, const std::string& path) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "sec") return 1.0;
  throw InputError(
      fmt::format("{}: {}.unit: expected one of ns, us, ms, sec, got \"{}\"", where, path, unit));
}

std::string unit_of(const json& m, const std::string& where, const std::string& path) {
  const json& u = bench_json::need(m, "unit", where, path);
  if (!u.is_string())
    throw InputError(
        fmt::format("{}: {}.unit: expected a string, got {}", where, path, bench_json::shown(u)));
  return u.get<std::string>();
}

double time_s(const json& metrics, const std::string& tag, const std::string& where) {
  const std::string path = "metrics." + tag;
  const json& m = bench_json::need(metrics, tag, where, "metrics");
  const double per = seconds_per(unit_of(m, where, path), where, path);
  return per *
         bench_json::number(bench_json::need(m, "value", where, path), where, path + ".value");
}

int64_t tokens(const json& metrics, const std::string& tag, const std::string& where) {
  const std::string path = "metrics." + tag;
  const json& m = bench_json::need(metrics, tag, where, "metrics");
  if (const std::string u = unit_of(m, where, path); u != "tokens")
    throw InputError(fmt::format("{}: {}.unit: expected \"tokens\", got \"{}\"", where, path, u));
  return bench_json::count(bench_json::need(m, "value", where, path), where, path + ".value");
}

// One record; nullopt for a failed request.
std::optional<AiperfRecord> parse_record(const json& j, const std::string& where) {
  const json& error = bench_json::need(j, "error", where, "");
  if (!error.is_null()) return std::nullopt;
  const json& meta = bench_json::need(j, "metadata", where, "");
  AiperfRecord r;
  const json& conv = bench_json::need(meta, "conversation_id", where, "metadata");
  if (!conv.is_string())
    throw InputError(fmt::format("{}: metadata.conversation_id: expected a string, got {}", where,
                                 bench_json::shown(conv)));
  r.conversation = conv.get<std::string>();
  // One user session of a multi-turn run: x_correlation_id (the same dataset conversation may
  // be replayed by several sessions); without it, the conversation.
  if (auto it = meta.find("x_correlation_id"); it != meta.end() && !it->is_null()) {
    if (!it->is_string())
      throw InputError(
          fmt::format("{}: metadata.x_correlation_id: expected a string or null, got {}", where,
                      bench_json::shown(*it)));
    r.conversation = it->get<std::string>();
  }
  r.turn = bench_json::count(bench_json::need(meta, "turn_index", where, "metadata"), where,
                             "metadata.turn_index");
  r.start_ns = bench_json::count(bench_json::need(meta, "request_start_ns", where, "metadata"),
                                 where, "metadata.request_start_ns");
  const json& m = bench_json::need(j, "metrics", where, "");
  RequestRow& row = r.row;
  row.input_tokens = tokens(m, "input_sequence_length", where);
  row.output_tokens = tokens(m, "output_sequence_length", where);
  row.ttft_s = time_s(m, "time_to_first_token", where);
  row.e2el_s = time_s(m, "request_latency", where);
  if (row.output_tokens >= 2)
    row.tpot_s = (row.e2el_s - row.ttft_s) / static_cast<double>(row.output_tokens - 1);
  if (auto it = m.find("inter_chunk_latency"); it != m.end()) {
    const std::string path = "metrics.inter_chunk_latency";
    const double per = seconds_per(unit_of(*it, where, path), where, path);
    const json& v =
        bench_json::list(bench_json::need(*it, "value", where, path), where, path + ".value");
    for (size_t i = 0; i < v.size(); ++i) {
      const double s = per * bench_json::number(v[i], where, fmt::format("{}.value[{}]", path, i));
      const auto ns = static_cast<int64_t>(std::llround(s * 1e9));
      if (!row.itl.empty() && row.itl.back().gap_ns == ns)
        ++row.itl.back().count;
      else
        row.itl.push_back({ns, 1});
    }
  }
  return r;
}

}  // namespace

MetricList aiperf_metrics(const std::vector<RequestRow>& rows, double duration_s) {
  Values ttft, itl, lat;
  int64_t osl = 0;
  for (const auto& r : rows) {
    ttft.add(r.ttft_s * 1e3);
    if (r.tpot_s >= 0) itl.add(r.tpot_s * 1e3);
    lat.add(r.e2el_s * 1e3);
    osl += r.output_tokens;
  }
  const double n = static_cast<double>(rows.size());
  return {{"time_to_first_token.avg", ttft.mean()},
          {"time_to_first_token.p50", ttft.percentile(50)},
          {"time_to_first_token.p90", ttft.percentile(90)},
          {"time_to_first_token.p99", ttft.percentile(99)},
          {"inter_token_latency.avg", itl.mean()},
          {"inter_token_latency.p50", itl.percentile(50)},
          {"inter_token_latency.p99", itl.percentile(99)},
          {"request_latency.avg", lat.mean()},
          {"request_latency.p50", lat.percentile(50)},
          {"request_latency.p99", lat.percentile(99)},
          {"output_token_throughput", static_cast<double>(osl) / duration_s},
          {"request_throughput", n / duration_s},
          {"benchmark_duration", duration_s}};
}

BenchRun read_aiperf(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw InputError(dir +
                     ": not a folder (expected AIPerf's artifacts: profile_export.jsonl, "
                     "profile_export_aiperf.json)");
  BenchRun run;
  run.kind = "aiperf";
  run.source = dir;
  const std::string records = (fs::path(dir) / "profile_export.jsonl").string();
  const std::string text = bench_json::read_json_text(records, "AIPerf's per-request records");
  std::vector<AiperfRecord> ok;
  std::istringstream in(text);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", records, n);
    const json j = bench_json::parse_json(line, where, n);
    if (auto r = parse_record(j, where))
      ok.push_back(std::move(*r));
    else
      ++run.excluded;
  }
  const std::string agg = (fs::path(dir) / "profile_export_aiperf.json").string();
  const json a =
      bench_json::parse_json(bench_json::read_json_text(agg, "AIPerf's aggregate statistics"), agg);
  const json& d = bench_json::need(a, "benchmark_duration", agg, "");
  const std::string unit = unit_of(d, agg, "benchmark_duration");
  run.duration_s = seconds_per(unit, agg, "benchmark_duration") *
                   bench_json::number(bench_json::need(d, "avg", agg, "benchmark_duration"), agg,
                                      "benchmark_duration.avg");
  // Sessions in order of first send; turns in order within each.
  std::stable_sort(ok.begin(), ok.end(),
                   [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
  std::map<std::string, int32_t> index;
  const int64_t first_ns = ok.empty() ? 0 : ok.front().start_ns;
  for (auto& r : ok) {
    auto [it, fresh] = index.emplace(r.conversation, static_cast<int32_t>(index.size()));
    if (fresh) run.session_ids.push_back(r.conversation);
    r.row.session = it->second;
    r.row.seg = static_cast<int32_t>(r.turn);
    r.row.send_s = static_cast<double>(r.start_ns - first_ns) * 1e-9;
  }
  std::stable_sort(ok.begin(), ok.end(), [](const auto& x, const auto& y) {
    return std::pair(x.row.session, x.row.seg) < std::pair(y.row.session, y.row.seg);
  });
  for (auto& r : ok) run.real.push_back(std::move(r.row));
  run.metrics = aiperf_metrics;
  run.headline = {"time_to_first_token.avg", "time_to_first_token.p90", "inter_token_latency.avg",
                  "request_latency.avg", "output_token_throughput"};
  return run;
}

}  // namespace isim::exp
