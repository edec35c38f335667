// A vllm bench serve result JSON as a BenchRun (against_vllm_bench.h).
#include "experiments/validate/against_vllm_bench.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/validate/against_json.h"

namespace isim::exp {

using bench_json::json;

namespace {

const json& detailed(const json& root, const std::string& key, const std::string& file) {
  auto it = root.find(key);
  if (it == root.end())
    throw InputError(fmt::format(
        "{}: {}: missing (the file was saved without --save-detailed; rerun vllm bench serve "
        "with --save-result --save-detailed)",
        file, key));
  return bench_json::list(*it, file, key);
}

double positive(const json& v, const std::string& file, const std::string& key) {
  const double x = bench_json::number(v, file, key);
  if (!(x > 0))
    throw InputError(fmt::format("{}: {}: expected a number > 0, got {}", file, key, x));
  return x;
}

// The successful requests in order of their start_times, from 0: replayed at those instants.
void use_start_times(BenchRun& run) {
  std::vector<size_t> order(run.real.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return run.real[a].send_s < run.real[b].send_s; });
  std::vector<RequestRow> rows;
  std::vector<std::string> ids;
  const double first = order.empty() ? 0 : run.real[order.front()].send_s;
  for (size_t i : order) {
    rows.push_back(std::move(run.real[i]));
    rows.back().session = static_cast<int32_t>(ids.size());
    rows.back().send_s -= first;
    ids.push_back(run.session_ids[i]);
  }
  run.real = std::move(rows);
  run.session_ids = std::move(ids);
  run.send_times = true;
  run.notes.push_back(
      "send times from the file's start_times: replayed request by request at those instants "
      "(request_rate, burstiness and max_concurrency are in them)");
}

}  // namespace

MetricList vllm_bench_metrics(const std::vector<RequestRow>& rows, double duration_s) {
  Values ttft, tpot, e2el;
  int64_t in = 0, out = 0;
  for (const auto& r : rows) {
    ttft.add(r.ttft_s * 1e3);
    if (r.tpot_s >= 0) tpot.add(r.tpot_s * 1e3);
    e2el.add(r.e2el_s * 1e3);
    in += r.input_tokens;
    out += r.output_tokens;
  }
  const Values itl = itl_values(rows);  // seconds: its statistics scale to ms below
  MetricList m;
  for (const auto& [name, v, ms] :
       {std::tuple<const char*, const Values*, double>{"ttft", &ttft, 1},
        {"tpot", &tpot, 1},
        {"itl", &itl, 1e3},
        {"e2el", &e2el, 1}}) {
    m.emplace_back(fmt::format("mean_{}_ms", name), ms * v->mean());
    m.emplace_back(fmt::format("median_{}_ms", name), ms * v->median());
    m.emplace_back(fmt::format("std_{}_ms", name), ms * v->std());
    m.emplace_back(fmt::format("p99_{}_ms", name), ms * v->percentile(99));
  }
  m.emplace_back("request_throughput", static_cast<double>(rows.size()) / duration_s);
  m.emplace_back("output_throughput", static_cast<double>(out) / duration_s);
  m.emplace_back("total_token_throughput", static_cast<double>(in + out) / duration_s);
  m.emplace_back("duration", duration_s);
  return m;
}

BenchRun read_vllm_bench(const std::string& path) {
  using bench_json::need;
  BenchRun run;
  run.kind = "vllm-bench";
  run.source = path;
  run.send_times = false;
  const json root = bench_json::parse_json(
      bench_json::read_json_text(path, "a vllm bench serve result JSON"), path);
  const json& rate = need(root, "request_rate", path, "");
  if (rate.is_string() && rate.get<std::string>() == "inf")
    run.request_rate = std::numeric_limits<double>::infinity();
  else if (rate.is_number())
    run.request_rate = positive(rate, path, "request_rate");
  else
    throw InputError(fmt::format("{}: request_rate: expected a number > 0 or \"inf\", got {}", path,
                                 bench_json::shown(rate)));
  run.burstiness = positive(need(root, "burstiness", path, ""), path, "burstiness");
  const json& mc = need(root, "max_concurrency", path, "");
  if (!mc.is_null()) {
    run.max_concurrency = bench_json::count(mc, path, "max_concurrency");
    if (run.max_concurrency < 1)
      throw InputError(path + ": max_concurrency: expected null or an integer >= 1, got 0");
  }
  run.duration_s = positive(need(root, "duration", path, ""), path, "duration");
  const json& inl = detailed(root, "input_lens", path);
  const json& outl = detailed(root, "output_lens", path);
  const json& ttfts = detailed(root, "ttfts", path);
  const json& itls = detailed(root, "itls", path);
  const json* errors =
      root.contains("errors") ? &bench_json::list(root["errors"], path, "errors") : nullptr;
  const json* latencies = root.contains("latencies")
                              ? &bench_json::list(root["latencies"], path, "latencies")
                              : nullptr;
  const json* starts = root.contains("start_times")
                           ? &bench_json::list(root["start_times"], path, "start_times")
                           : nullptr;
  for (const auto& [key, v] : {std::pair<const char*, const json*>{"output_lens", &outl},
                               {"ttfts", &ttfts},
                               {"itls", &itls},
                               {"errors", errors},
                               {"latencies", latencies},
                               {"start_times", starts}})
    if (v && v->size() != inl.size())
      throw InputError(fmt::format("{}: {}: {} entries, but input_lens has {}", path, key,
                                   v->size(), inl.size()));
  for (size_t i = 0; i < inl.size(); ++i) {
    auto at = [&](const char* k) { return fmt::format("{}[{}]", k, i); };
    RequestRow r;
    r.input_tokens = bench_json::count(inl[i], path, at("input_lens"));
    r.output_tokens = bench_json::count(outl[i], path, at("output_lens"));
    bool failed = r.output_tokens == 0;
    if (errors) {
      const json& e = (*errors)[i];
      if (!e.is_string())
        throw InputError(fmt::format("{}: {}: expected a string, got {}", path, at("errors"),
                                     bench_json::shown(e)));
      failed = !e.get<std::string>().empty();
    }
    if (failed) {
      ++run.excluded;
      continue;
    }
    r.session = static_cast<int32_t>(run.real.size());
    if (starts) r.send_s = bench_json::number((*starts)[i], path, at("start_times"));
    r.ttft_s = bench_json::number(ttfts[i], path, at("ttfts"));
    double sum = 0;
    const json& gaps = bench_json::list(itls[i], path, at("itls"));
    for (size_t k = 0; k < gaps.size(); ++k) {
      const double g = bench_json::number(gaps[k], path, fmt::format("itls[{}][{}]", i, k));
      sum += g;
      const auto ns = static_cast<int64_t>(std::llround(g * 1e9));
      if (!r.itl.empty() && r.itl.back().gap_ns == ns)
        ++r.itl.back().count;
      else
        r.itl.push_back({ns, 1});
    }
    r.e2el_s =
        latencies ? bench_json::number((*latencies)[i], path, at("latencies")) : r.ttft_s + sum;
    if (r.output_tokens >= 2)
      r.tpot_s = (r.e2el_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1);
    run.session_ids.push_back(fmt::format("req-{}", i));
    run.real.push_back(std::move(r));
  }
  if (starts) {
    use_start_times(run);
  } else {
    if (auto it = root.find("ramp_up_strategy"); it != root.end() && !it->is_null())
      throw InputError(fmt::format(
          "{}: ramp_up_strategy: {}: replaying a ramp-up is not simulated yet (rerun without "
          "--ramp-up-strategy, or with --save-detailed on a vLLM that saves start_times)",
          path, bench_json::shown(*it)));
    run.duration_from_start = true;
  }
  run.metrics = vllm_bench_metrics;
  run.headline = {"mean_ttft_ms", "p99_ttft_ms",  "mean_tpot_ms",
                  "mean_itl_ms",  "mean_e2el_ms", "output_throughput"};
  if (!starts)
    run.notes.push_back(fmt::format(
        "no send times in the file: arrivals drawn at request_rate {} with burstiness {}; the "
        "comparison is of distributions, not request by request",
        rate.is_string() ? std::string("inf") : fmt::format("{}", run.request_rate),
        run.burstiness));
  return run;
}

}  // namespace isim::exp
