// bench.json in vLLM bench serve's result format (bench_json.h; the --bench-json copy is in
// bench_json_flag.cpp).
#include "experiments/run/bench_json.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "experiments/run/py_float.h"
#include "experiments/run/request_metrics.h"
#include "sim/time.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

// Appends a float as Python's json writes it (py_float.h), NaN and the infinities as its words.
void put_num(std::string& out, double x) {
  if (std::isnan(x)) {
    out += "NaN";
    return;
  }
  if (std::isinf(x)) {
    out += x > 0 ? "Infinity" : "-Infinity";
    return;
  }
  append_py_float(out, x);
}

std::string num(double x) {
  std::string s;
  put_num(s, x);
  return s;
}

std::string str(const std::string& s) {
  return nlohmann::json(s).dump();
}

// One request as vLLM's RequestFuncOutput holds it: a completed one is its turn (its row,
// request_metrics.h, made from it where needed), a refused one its FailedRequest.
// 24 bytes: a run lists millions.
struct Request {
  double send_s = 0;
  const sim::TurnRecord* row = nullptr;                           // completed
  const FailedRequest* failed = nullptr;                          // refused
  double e2el_s() const { return row->finish_s - row->start_s; }  // completed
  double end_s() const { return row ? send_s + e2el_s() : send_s; }
  int32_t session() const { return row ? row->session : failed->session; }
  int32_t seg() const { return row ? row->seg : 0; }
};

bool send_order(const Request& a, const Request& b) {
  if (a.send_s != b.send_s) return a.send_s < b.send_s;
  return a.session() != b.session() ? a.session() < b.session() : a.seg() < b.seg();
}

// The text of a JSON object, one top-level key per line, given to `put` a megabyte at a time.
class Out {
 public:
  explicit Out(const PutText& put) : put_(put) { text_.reserve(kChunk + 4096); }
  void field(std::string_view key, const std::string& value) {
    key_(key);
    text_ += value;
  }
  // A list of one item per request, `item(text, request)` appending each.
  template <class F>
  void list(std::string_view key, const std::vector<Request>& rq, F&& item) {
    key_(key);
    text_ += '[';
    for (size_t i = 0; i < rq.size(); ++i) {
      if (i > 0) text_ += ", ";
      item(text_, rq[i]);
      if (text_.size() >= kChunk) flush();
    }
    text_ += ']';
  }
  void done() {
    text_ += "\n}\n";
    flush();
  }

 private:
  void key_(std::string_view key) {
    text_ += first_ ? "{\n  " : ",\n  ";
    first_ = false;
    text_ += str(std::string(key));
    text_ += ": ";
  }
  void flush() {
    put_(text_);
    text_.clear();
  }
  static constexpr size_t kChunk = 1 << 20;
  const PutText& put_;
  std::string text_;
  bool first_ = true;
};

// A request's gaps from the run's arena, each as a float in seconds.
void put_itls(std::string& out, const Request& q, const sim::GapArena& gaps) {
  out += '[';
  bool first = true;
  if (q.row)
    gaps.each(q.row->gaps_at, q.row->gaps_words, [&](const sim::GapRun& g) {
      const double s = sim::to_seconds(g.gap_ns);
      for (int64_t k = 0; k < g.count; ++k) {
        if (!first) out += ", ";
        first = false;
        put_num(out, s);
      }
    });
  out += ']';
}

// What bench.json gives of a figure's values (kept instead of the values: a run's millions of
// requests need not hold every figure's at once).
constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();
struct Stats {
  int64_t n = 0;
  double mean = 0, median = 0, std = 0, p99 = 0;
};
Stats stats_of(const Values& v) {
  return {v.size(), v.mean(), v.median(), v.std(), v.percentile(99)};
}

// Statistics in ms; over no values 0, as vLLM's np.mean(x or 0).
void add_stats(Out& o, const std::string& name, const Stats& v) {
  const auto ms = [&](double s) { return num(v.n == 0 ? 0.0 : s * 1000); };
  o.field("mean_" + name + "_ms", ms(v.mean));
  o.field("median_" + name + "_ms", ms(v.median));
  o.field("std_" + name + "_ms", ms(v.std));
  o.field("p99_" + name + "_ms", ms(v.p99));
}

bool good(const RequestRow& r, const BenchGoodput& g) {
  const double tpot = r.tpot_s < 0 ? 0.0 : r.tpot_s;  // vLLM: TPOT 0 below 2 outputs
  return (g.ttft_ms <= 0 || r.ttft_s <= g.ttft_ms / 1000) &&
         (g.tpot_ms <= 0 || tpot <= g.tpot_ms / 1000) &&
         (g.e2el_ms <= 0 || r.e2el_s <= g.e2el_ms / 1000);
}

// The most completed requests in flight at once over half-open [send, end) (vLLM's
// max_concurrent_requests), `rq` in send order: the ends of those in flight in a min-heap.
int64_t most_in_flight(const std::vector<Request>& rq) {
  std::vector<double> ends;  // a min-heap
  const auto later = std::greater<double>();
  int64_t most = 0;
  for (const Request& q : rq) {
    if (!q.row) continue;
    while (!ends.empty() && ends.front() <= q.send_s) {  // ended by now: [send, end) is open
      std::pop_heap(ends.begin(), ends.end(), later);
      ends.pop_back();
    }
    ends.push_back(q.end_s());
    std::push_heap(ends.begin(), ends.end(), later);
    most = std::max(most, static_cast<int64_t>(ends.size()));
  }
  return most;
}

}  // namespace

BenchGoodput bench_goodput(const RunSlo& slo, const TurnSlo& turn) {
  BenchGoodput g;
  for (const auto& [k, v] : slo) {
    if (k == "ttft_s" && turn.request_ttft_s <= 0)
      g.ttft_ms = v * 1000;
    else if (k == "tpot_s")
      g.tpot_ms = v * 1000;
    else if (k != "ttft_s")
      g.unmapped.push_back(k);
  }
  if (turn.request_ttft_s > 0) g.ttft_ms = turn.request_ttft_s * 1000;
  if (turn.itl_max_s > 0) g.unmapped.push_back("itl_max_s");
  if (turn.request_ttft_s > 0 &&
      std::any_of(slo.begin(), slo.end(), [](const auto& kv) { return kv.first == "ttft_s"; }))
    g.unmapped.push_back("ttft_s");
  std::sort(g.unmapped.begin(), g.unmapped.end());
  return g;
}

std::vector<FailedRequest> failed_requests(const trace::Trace& t, const cluster::RunResult& r) {
  std::unordered_map<std::string_view, int32_t> index;
  for (size_t i = 0; i < t.size(); ++i) index.emplace(t[i].id, static_cast<int32_t>(i));
  // Each skip's line ("session ID skipped: why") by its head, the part before ": ".
  std::unordered_map<std::string_view, const std::string*> why_of;
  for (const std::string& why : r.skipped) {
    const size_t colon = why.find(" skipped: ");
    if (colon != std::string::npos)
      why_of.emplace(std::string_view(why).substr(0, colon + 8), &why);
  }
  std::vector<FailedRequest> out;
  for (const sim::SessionRecord& s : r.sessions) {
    if (s.status != "skipped") continue;
    const auto it = index.find(s.id);
    if (it == index.end() || t[static_cast<size_t>(it->second)].segments.empty()) continue;
    FailedRequest f;
    f.session = it->second;
    f.send_s = s.arrival_s;
    f.input_tokens = t[static_cast<size_t>(it->second)].segments.front().input;
    f.error = "session " + s.id + " skipped";
    if (const auto w = why_of.find(f.error); w != why_of.end()) f.error = *w->second;
    out.push_back(std::move(f));
  }
  return out;
}

BenchMeta bench_meta(const Experiment& e, const Inputs& in, const PolicySpec& p) {
  BenchMeta m;
  m.label = p.name;
  m.policy = p.name;
  m.model_id = in.profile.model.name;
  m.seed = e.seed;
  m.detailed = e.run_metrics.bench_json == "detailed";
  if (e.arrival.process == "poisson") {
    m.request_rate = num(e.arrival.rate);
    m.burstiness = "1.0";
  } else if (e.arrival.process == "users") {
    m.request_rate = "\"inf\"";
    m.max_concurrency = std::to_string(e.arrival.users);
  }
  return m;
}

std::string bench_json_text(const cluster::RunResult& r, const std::vector<FailedRequest>& failed,
                            const BenchGoodput& goodput, const BenchMeta& meta) {
  std::string text;
  write_bench_json_text(r, failed, goodput, meta, [&](std::string_view s) { text += s; });
  return text;
}

void write_bench_json_text(const cluster::RunResult& r, const std::vector<FailedRequest>& failed,
                           const BenchGoodput& goodput, const BenchMeta& meta, const PutText& put) {
  if (meta.detailed && !r.gaps_kept)
    throw std::logic_error("bench.json: detailed lists need the run's gaps, which it did not keep");
  const std::vector<sim::TurnRecord>& turns = r.turns;
  const Stats itl = stats_of(itl_values(r.tallies));
  int64_t in_tokens = 0, out_tokens = 0, met = 0;
  for (const sim::TurnRecord& t : turns) {
    const RequestRow row = request_row(t);
    in_tokens += row.input_tokens;
    out_tokens += row.output_tokens;
    if (!goodput.empty() && good(row, goodput)) ++met;
  }
  // Each figure over the completed requests (any order: values_of sorts them, in linear time),
  // one list at a time, before the requests are listed; NaN leaves a request out.
  const auto figure = [&turns](double (*pick)(const RequestRow&)) {
    std::vector<double> v;
    v.reserve(turns.size());
    for (const sim::TurnRecord& t : turns)
      if (const double x = pick(request_row(t)); !std::isnan(x)) v.push_back(x);
    return stats_of(values_of(std::move(v)));
  };
  const Stats ttft = figure([](const RequestRow& q) { return q.ttft_s; });
  const Stats tpot =
      figure([](const RequestRow& q) { return q.tpot_s >= 0 ? q.tpot_s : kNoValue; });
  const Stats e2el = figure([](const RequestRow& q) { return q.e2el_s; });
  // A run's turns come in send order; the refused (few) are sorted and merged in, after the
  // completed ones at equal keys (as one stable sort of completed then refused would put them).
  std::vector<Request> refused;
  for (const FailedRequest& f : failed) refused.push_back({f.send_s, nullptr, &f});
  std::stable_sort(refused.begin(), refused.end(), send_order);
  std::vector<Request> rq;
  rq.reserve(turns.size() + refused.size());
  size_t next = 0;  // of refused
  for (const sim::TurnRecord& t : turns) {
    const Request q{t.start_s, &t, nullptr};
    while (next < refused.size() && send_order(refused[next], q)) rq.push_back(refused[next++]);
    rq.push_back(q);
  }
  rq.insert(rq.end(), refused.begin() + static_cast<std::ptrdiff_t>(next), refused.end());
  if (!std::is_sorted(rq.begin(), rq.end(), send_order))  // turns not in send order
    std::stable_sort(rq.begin(), rq.end(), send_order);
  double duration = 0;
  for (const Request& q : rq) duration = std::max(duration, q.end_s());
  const auto per_s = [&](double n) { return num(duration > 0 ? n / duration : 0.0); };
  const auto completed = static_cast<int64_t>(turns.size());

  Out o(put);
  o.field("date", "null");
  o.field("endpoint_type", str("isim"));
  o.field("backend", str("isim"));
  o.field("label", str(meta.label));
  o.field("model_id", str(meta.model_id));
  o.field("tokenizer_id", "null");
  o.field("num_prompts", std::to_string(rq.size()));
  {
    nlohmann::ordered_json x;
    x["policy"] = meta.policy;
    x["seed"] = meta.seed;
    x["request"] = "one turn: one LLM call of a session";
    x["goodput_ms"] = nlohmann::ordered_json::object();
    if (goodput.ttft_ms > 0) x["goodput_ms"]["ttft"] = goodput.ttft_ms;
    if (goodput.tpot_ms > 0) x["goodput_ms"]["tpot"] = goodput.tpot_ms;
    if (goodput.e2el_ms > 0) x["goodput_ms"]["e2el"] = goodput.e2el_ms;
    x["slo_not_in_goodput"] = goodput.unmapped;
    o.field("isim", x.dump());
  }
  o.field("request_rate", meta.request_rate);
  o.field("burstiness", meta.burstiness);
  o.field("max_concurrency", meta.max_concurrency);
  o.field("duration", num(duration));
  o.field("completed", std::to_string(completed));
  o.field("failed", std::to_string(failed.size()));
  o.field("total_input_tokens", std::to_string(in_tokens));
  o.field("total_output_tokens", std::to_string(out_tokens));
  o.field("request_throughput", per_s(static_cast<double>(completed)));
  o.field("request_goodput", goodput.empty() ? "null" : per_s(static_cast<double>(met)));
  o.field("output_throughput", per_s(static_cast<double>(out_tokens)));
  o.field("total_token_throughput", per_s(static_cast<double>(in_tokens + out_tokens)));
  if (meta.detailed) {
    o.list("input_lens", rq, [](std::string& t, const Request& q) {
      t += std::to_string(q.row ? q.row->input_tokens : q.failed->input_tokens);
    });
    o.list("output_lens", rq, [](std::string& t, const Request& q) {
      t += std::to_string(q.row ? q.row->output_tokens : 0);
    });
    o.list("ttfts", rq,
           [](std::string& t, const Request& q) { put_num(t, q.row ? q.row->ttft_s : 0.0); });
    o.list("itls", rq, [&](std::string& t, const Request& q) { put_itls(t, q, r.gaps); });
    o.list("latencies", rq,
           [](std::string& t, const Request& q) { put_num(t, q.row ? q.e2el_s() : 0.0); });
    o.list("start_times", rq, [](std::string& t, const Request& q) { put_num(t, q.send_s); });
    o.list("errors", rq,
           [](std::string& t, const Request& q) { t += str(q.row ? "" : q.failed->error); });
  }
  const std::vector<int64_t>& buckets = r.tallies.per_second;
  const int64_t tokens_per_s =
      buckets.empty() ? 0 : *std::max_element(buckets.begin(), buckets.end());
  o.field("max_output_tokens_per_s", num(static_cast<double>(tokens_per_s)));
  o.field("max_concurrent_requests", std::to_string(most_in_flight(rq)));
  o.field("rtfx", "0.0");
  add_stats(o, "ttft", ttft);
  add_stats(o, "tpot", tpot);
  add_stats(o, "itl", itl);
  add_stats(o, "e2el", e2el);
  o.done();
}

void write_bench_json(const std::string& dir, const Experiment& e, const Inputs& in,
                      const PolicySpec& p, const cluster::RunResult& r) {
  if (e.run_metrics.bench_json == "off") return;
  const auto failed = failed_requests(in.trace, r);
  const auto goodput = bench_goodput(e.slo, e.turn_slo);
  const auto meta = bench_meta(e, in, p);
  write_file_atomic((fs::path(dir) / "bench.json").string(), [&](const PutText& put) {
    write_bench_json_text(r, failed, goodput, meta, put);
  });
}

}  // namespace isim::exp
