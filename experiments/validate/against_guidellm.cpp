// A GuideLLM benchmarks.json report as a BenchRun (against_guidellm.h).
#include "experiments/validate/against_guidellm.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/validate/against_json.h"

namespace isim::exp {

using bench_json::json;

namespace {

struct GuideRecord {
  std::string conversation;
  int64_t turn = 0;
  double start = 0;
  RequestRow row;
};

GuideRecord parse_request(const json& q, const std::string& file, const std::string& path) {
  using bench_json::need;
  GuideRecord r;
  RequestRow& row = r.row;
  row.input_tokens =
      bench_json::count(need(q, "prompt_tokens", file, path), file, path + ".prompt_tokens");
  row.output_tokens =
      bench_json::count(need(q, "output_tokens", file, path), file, path + ".output_tokens");
  const std::string ip = path + ".info", tp = ip + ".timings";
  const json& info = need(q, "info", file, path);
  const json& t = need(info, "timings", file, ip);
  auto time = [&](const char* k) {
    return bench_json::number(need(t, k, file, tp), file, tp + "." + k);
  };
  r.start = time("request_start");
  const double first = time("first_token_iteration"), last = time("last_token_iteration");
  if (first < r.start || last < first)
    throw InputError(fmt::format(
        "{}: {}: request_start {}, first_token_iteration {}, last_token_iteration {}: expected "
        "them in that order",
        file, tp, r.start, first, last));
  row.ttft_s = first - r.start;
  row.e2el_s = last - r.start;
  if (row.output_tokens >= 2)
    row.tpot_s = (last - first) / static_cast<double>(row.output_tokens - 1);
  if (auto it = info.find("conversation_id"); it != info.end() && !it->is_null()) {
    if (!it->is_string())
      throw InputError(fmt::format("{}: {}.conversation_id: expected a string or null, got {}",
                                   file, ip, bench_json::shown(*it)));
    r.conversation = it->get<std::string>();
  }
  if (auto it = info.find("turn_index"); it != info.end())
    r.turn = bench_json::count(*it, file, ip + ".turn_index");
  return r;
}

}  // namespace

MetricList guidellm_metrics(const std::vector<RequestRow>& rows, double duration_s) {
  Values ttft, tpot, itl, lat;
  int64_t osl = 0;
  for (const auto& r : rows) {
    ttft.add(r.ttft_s * 1e3);
    if (r.output_tokens > 0)
      tpot.add(r.e2el_s * 1e3 / static_cast<double>(r.output_tokens), r.output_tokens);
    if (r.tpot_s >= 0) itl.add(r.tpot_s * 1e3, r.output_tokens - 1);
    lat.add(r.e2el_s);
    osl += r.output_tokens;
  }
  return {{"time_to_first_token_ms.mean", ttft.mean()},
          {"time_to_first_token_ms.median", ttft.inverse_cdf(50)},
          {"time_to_first_token_ms.p99", ttft.inverse_cdf(99)},
          {"time_per_output_token_ms.mean", tpot.mean()},
          {"time_per_output_token_ms.median", tpot.inverse_cdf(50)},
          {"time_per_output_token_ms.p99", tpot.inverse_cdf(99)},
          {"inter_token_latency_ms.mean", itl.mean()},
          {"inter_token_latency_ms.median", itl.inverse_cdf(50)},
          {"inter_token_latency_ms.p99", itl.inverse_cdf(99)},
          {"request_latency.mean", lat.mean()},
          {"request_latency.median", lat.inverse_cdf(50)},
          {"request_latency.p99", lat.inverse_cdf(99)},
          {"output_tokens_per_s", static_cast<double>(osl) / duration_s},
          {"duration_s", duration_s}};
}

BenchRun read_guidellm(const std::string& path, int64_t benchmark) {
  using bench_json::need;
  BenchRun run;
  run.kind = "guidellm";
  run.source = path;
  const bool yaml = path.ends_with(".yaml") || path.ends_with(".yml");
  const json root =
      yaml ? bench_json::read_yaml_as_json(path, "a GuideLLM report")
           : bench_json::parse_json(bench_json::read_json_text(path, "a GuideLLM report"), path);
  const json& all = bench_json::list(need(root, "benchmarks", path, ""), path, "benchmarks");
  const auto n = static_cast<int64_t>(all.size());
  if (n == 0) throw InputError(path + ": benchmarks: empty; expected one benchmark at least");
  if (benchmark < 0 && n > 1)
    throw InputError(
        fmt::format("{}: benchmarks: {} benchmarks (a sweep): pick one with --benchmark I (0..{})",
                    path, n, n - 1));
  if (benchmark >= n)
    throw InputError(fmt::format("--benchmark: {} is past the report's {} benchmarks (0..{})",
                                 benchmark, n, n - 1));
  const int64_t b = std::max<int64_t>(benchmark, 0);
  const std::string bp = fmt::format("benchmarks[{}]", b);
  const json& req = need(all[static_cast<size_t>(b)], "requests", path, bp);
  const std::string rp = bp + ".requests";
  const json& ok = bench_json::list(need(req, "successful", path, rp), path, rp + ".successful");
  for (const char* k : {"errored", "incomplete"})
    run.excluded +=
        static_cast<int64_t>(bench_json::list(need(req, k, path, rp), path, rp + "." + k).size());
  std::vector<GuideRecord> recs;
  for (size_t k = 0; k < ok.size(); ++k)
    recs.push_back(parse_request(ok[k], path, fmt::format("{}.successful[{}]", rp, k)));
  std::stable_sort(recs.begin(), recs.end(),
                   [](const auto& x, const auto& y) { return x.start < y.start; });
  std::map<std::string, int32_t> index;
  const double first = recs.empty() ? 0 : recs.front().start;
  for (size_t k = 0; k < recs.size(); ++k) {
    GuideRecord& r = recs[k];
    // A request without a conversation is one of its own.
    const std::string key = r.conversation.empty() ? fmt::format("\n{}", k) : r.conversation;
    auto [it, fresh] = index.emplace(key, static_cast<int32_t>(index.size()));
    if (fresh)
      run.session_ids.push_back(r.conversation.empty() ? fmt::format("request-{}", k)
                                                       : r.conversation);
    r.row.session = it->second;
    r.row.seg = static_cast<int32_t>(r.turn);
    r.row.send_s = r.start - first;
  }
  std::stable_sort(recs.begin(), recs.end(), [](const auto& x, const auto& y) {
    return std::pair(x.row.session, x.row.seg) < std::pair(y.row.session, y.row.seg);
  });
  for (auto& r : recs) run.real.push_back(std::move(r.row));
  run.duration_s = rows_span_s(run.real);
  run.metrics = guidellm_metrics;
  run.headline = {"time_to_first_token_ms.mean", "inter_token_latency_ms.mean",
                  "time_per_output_token_ms.mean", "request_latency.mean", "output_tokens_per_s"};
  return run;
}

}  // namespace isim::exp
