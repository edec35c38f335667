// A run as OpenMetrics text under vLLM's metric names (openmetrics.h).
#include "experiments/run/openmetrics.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "experiments/run/py_float.h"
#include "sim/time.h"

namespace isim::exp {

namespace {

using sim::Nanos;
using Buf = fmt::memory_buffer;

constexpr size_t kPiece = 1 << 20;  // text handed to the sink at a time, at least

// One histogram of one series: observations per point, by bucket (the last: above every
// bound), as deltas until accumulate() turns them into totals up to each point.
class PointHist {
 public:
  PointHist(const std::vector<int64_t>& bounds, size_t points)
      : bounds_(&bounds), width_(bounds.size() + 1), n_(points * width_, 0), sum_(points, 0) {}
  size_t bucket(int64_t v) const {
    return static_cast<size_t>(std::lower_bound(bounds_->begin(), bounds_->end(), v) -
                               bounds_->begin());
  }
  void observe(size_t k, size_t bucket, int64_t v, int64_t count = 1) {
    n_[k * width_ + bucket] += count;
    sum_[k] += v * count;
  }
  void accumulate() {
    for (size_t k = 1; k < sum_.size(); ++k) {
      sum_[k] += sum_[k - 1];
      for (size_t b = 0; b < width_; ++b) n_[k * width_ + b] += n_[(k - 1) * width_ + b];
    }
  }
  const std::vector<int64_t>& bounds() const { return *bounds_; }
  // Observations in bucket b (b == bounds().size(): above every bound) up to point k.
  int64_t count(size_t k, size_t b) const { return n_[k * width_ + b]; }
  int64_t sum(size_t k) const { return sum_[k]; }

 private:
  const std::vector<int64_t>* bounds_;
  size_t width_;
  std::vector<int64_t> n_, sum_;
};

// Counts that add up over points: deltas, then totals.
struct PointCounts {
  explicit PointCounts(size_t points) : v(points, 0) {}
  void accumulate() {
    for (size_t k = 1; k < v.size(); ++k) v[k] += v[k - 1];
  }
  std::vector<int64_t> v;
};

std::vector<int64_t> to_ns(const std::vector<double>& seconds) {
  std::vector<int64_t> out;
  for (double s : seconds) out.push_back(sim::from_seconds(s));
  return out;
}

struct Bounds {
  std::vector<int64_t> ttft, itl, e2e, tokens;
};

// What one replica did, per point.
struct ReplicaCounts {
  ReplicaCounts(const Bounds& b, size_t points)
      : prompt(points),
        gen(points),
        success(points),
        ttft(b.ttft, points),
        itl(b.itl, points),
        e2e(b.e2e, points),
        prompt_len(b.tokens, points),
        gen_len(b.tokens, points) {}
  void accumulate() {
    for (PointCounts* c : {&prompt, &gen, &success}) c->accumulate();
    for (PointHist* h : {&ttft, &itl, &e2e, &prompt_len, &gen_len}) h->accumulate();
  }
  PointCounts prompt, gen, success;
  PointHist ttft, itl, e2e, prompt_len, gen_len;
};

int64_t round_ms(Nanos t) {
  return (t + 500'000) / 1'000'000;  // t >= 0
}

std::string escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Writes the file in pieces to `sink`. A replica's counts are computed when its series are
// written, once per family: memory holds one replica's counts and about 1 MB of text.
class Writer {
 public:
  Writer(const cluster::RunResult& r, const OmOptions& o, const PutText& sink);
  void write();

 private:
  const ReplicaCounts& counts(size_t i);
  void count_turn(ReplicaCounts& c, const sim::TurnRecord& t) const;
  void flush(size_t at_least);
  size_t point(Nanos t) const {
    const auto k =
        static_cast<size_t>(std::upper_bound(pts_.begin(), pts_.end(), t) - pts_.begin());
    return std::min(k, pts_.size() - 1);
  }
  void header(const char* name, const char* type, const char* help, bool seconds = false);
  void gauges();
  void counter(const char* name, const char* help,
               const std::function<int64_t(size_t r, size_t k)>& value);
  void histogram(const char* name, const char* help, bool seconds,
                 PointHist ReplicaCounts::*member);

  const cluster::RunResult& r_;
  Bounds bounds_;
  std::vector<Nanos> pts_;
  size_t samples_ = 0;  // pts_[0, samples_) are sample times
  std::vector<std::string> labels_, stamps_;
  std::vector<std::vector<size_t>> turns_of_;  // each replica's turns (indices into r_.turns)
  std::optional<ReplicaCounts> cur_;           // the counts of replica cur_i_
  size_t cur_i_ = 0, n_ = 0;
  const PutText& sink_;
  Buf out_;
};

Writer::Writer(const cluster::RunResult& r, const OmOptions& o, const PutText& sink)
    : r_(r), n_(r.replicas.size()), sink_(sink) {
  const size_t n = n_;
  if (o.replicas.size() != n)
    throw std::logic_error(fmt::format("openmetrics: {} replica labels for a run of {} replicas",
                                       o.replicas.size(), n));
  if (r.replica_timeseries.size() != r.timeseries.size() * n)
    throw std::logic_error("openmetrics: the run kept no per-replica time series");
  if (!r.gaps_kept) throw std::logic_error("openmetrics: the run kept no per-turn gaps");
  for (size_t k = 0; k < r.replica_timeseries.size(); ++k)
    if (r.replica_timeseries[k].replica != static_cast<int32_t>(k % n))
      throw std::logic_error("openmetrics: replica samples are not time-major");
  bounds_ = {to_ns(kTtftBuckets), to_ns(kItlBuckets), to_ns(kE2eBuckets),
             buckets_1_2_5(o.max_model_len)};
  for (const auto& s : r.timeseries) pts_.push_back(sim::from_seconds(s.t_s));
  samples_ = pts_.size();
  Nanos end = -1;
  for (const auto& t : r.turns) end = std::max(end, sim::from_seconds(t.finish_s));
  if (end >= 0 && (pts_.empty() || round_ms(end) > round_ms(pts_.back()))) pts_.push_back(end);
  for (size_t i = 0; i < n; ++i)
    labels_.push_back(fmt::format("model_name=\"{}\",engine=\"{}\",replica=\"{}\"",
                                  escape(o.replicas[i].model_name), o.replicas[i].engine, i));
  for (Nanos t : pts_) {
    const int64_t ms = o.epoch_s * 1000 + round_ms(t);
    stamps_.push_back(fmt::format("{}.{:03}", ms / 1000, ms % 1000));
  }
  turns_of_.resize(n);
  for (size_t j = 0; j < r.turns.size(); ++j)
    if (r.turns[j].replica >= 0 && static_cast<size_t>(r.turns[j].replica) < n)
      turns_of_[static_cast<size_t>(r.turns[j].replica)].push_back(j);
}

const ReplicaCounts& Writer::counts(size_t i) {
  if (cur_ && cur_i_ == i) return *cur_;
  cur_.emplace(bounds_, pts_.size());
  cur_i_ = i;
  if (pts_.empty()) return *cur_;
  for (size_t j : turns_of_[i]) count_turn(*cur_, r_.turns[j]);
  cur_->accumulate();
  return *cur_;
}

void Writer::flush(size_t at_least) {
  if (out_.size() < at_least) return;
  sink_(std::string_view(out_.data(), out_.size()));
  out_.clear();
}

void Writer::count_turn(ReplicaCounts& c, const sim::TurnRecord& t) const {
  const Nanos start = sim::from_seconds(t.start_s), ttft = sim::from_seconds(t.ttft_s);
  const Nanos finish = sim::from_seconds(t.finish_s);
  Nanos at = start + ttft;  // the first token
  size_t k = point(at);
  c.prompt.v[k] += t.input_tokens;
  c.ttft.observe(k, c.ttft.bucket(ttft), ttft);
  c.gen.v[k] += 1;
  r_.gaps.each(t.gaps_at, t.gaps_words, [&](const sim::GapRun& g) {
    const size_t b = c.itl.bucket(g.gap_ns);
    for (int64_t i = 0; i < g.count; ++i) {
      at += g.gap_ns;
      while (k + 1 < pts_.size() && pts_[k] <= at) ++k;
      c.gen.v[k] += 1;
      c.itl.observe(k, b, g.gap_ns);
    }
  });
  k = point(finish);
  c.success.v[k] += 1;
  c.e2e.observe(k, c.e2e.bucket(finish - start), finish - start);
  c.prompt_len.observe(k, c.prompt_len.bucket(t.input_tokens), t.input_tokens);
  c.gen_len.observe(k, c.gen_len.bucket(t.output_tokens), t.output_tokens);
}

void Writer::header(const char* name, const char* type, const char* help, bool seconds) {
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  if (seconds) fmt::format_to(std::back_inserter(out_), "# UNIT {} seconds\n", name);
}

void Writer::gauges() {
  struct Gauge {
    const char* name;
    const char* help;
    std::string (*value)(const sim::TimeSample& s, int64_t gpu_blocks);
  };
  const auto usage = [](const sim::TimeSample& s, int64_t gpu) {
    return fmt::format(
        "{}", gpu > 0 ? static_cast<double>(s.gpu_blocks_used) / static_cast<double>(gpu) : 0.0);
  };
  const Gauge list[] = {
      {"vllm:num_requests_running",
       "Requests in the simulated engine's running set at the sample time.",
       [](const sim::TimeSample& s, int64_t) { return fmt::format("{}", s.running); }},
      {"vllm:num_requests_waiting",
       "Requests queued for their prefill (new and resumed turns) at the sample time.",
       [](const sim::TimeSample& s, int64_t) { return fmt::format("{}", s.waiting); }},
      {"vllm:kv_cache_usage_perc",
       "Fraction (0 to 1) of the replica's GPU KV blocks that requests hold at the sample time.",
       usage},
      {"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc under its name before vLLM 0.9.",
       usage},
  };
  const size_t n = n_;
  for (const Gauge& g : list) {
    header(g.name, "gauge", g.help);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < samples_; ++k)
        fmt::format_to(std::back_inserter(out_), "{}{{{}}} {} {}\n", g.name, labels_[i],
                       g.value(r_.replica_timeseries[k * n + i].s, r_.replicas[i].blocks.gpu),
                       stamps_[k]);
      flush(kPiece);
    }
  }
}

void Writer::counter(const char* name, const char* help,
                     const std::function<int64_t(size_t, size_t)>& value) {
  header(name, "counter", help);
  for (size_t i = 0; i < n_; ++i) {
    for (size_t k = 0; k < pts_.size(); ++k)
      fmt::format_to(std::back_inserter(out_), "{}_total{{{}}} {} {}\n", name, labels_[i],
                     value(i, k), stamps_[k]);
    flush(kPiece);
  }
}

void Writer::histogram(const char* name, const char* help, bool seconds,
                       PointHist ReplicaCounts::*member) {
  header(name, "histogram", help, seconds);
  auto it = std::back_inserter(out_);
  const std::vector<int64_t>& b = (counts(0).*member).bounds();
  std::vector<std::string> le;
  for (int64_t x : b) le.push_back(py_float(seconds ? sim::to_seconds(x) : static_cast<double>(x)));
  le.emplace_back("+Inf");
  for (size_t i = 0; i < n_; ++i) {
    const PointHist& h = counts(i).*member;
    for (size_t k = 0; k < pts_.size(); ++k) {
      int64_t c = 0;  // cumulative over the buckets
      for (size_t j = 0; j <= b.size(); ++j) {
        c += h.count(k, j);
        fmt::format_to(it, "{}_bucket{{{},le=\"{}\"}} {} {}\n", name, labels_[i], le[j], c,
                       stamps_[k]);
      }
      fmt::format_to(it, "{}_count{{{}}} {} {}\n", name, labels_[i], c, stamps_[k]);
      if (seconds)
        fmt::format_to(it, "{}_sum{{{}}} {} {}\n", name, labels_[i], sim::to_seconds(h.sum(k)),
                       stamps_[k]);
      else
        fmt::format_to(it, "{}_sum{{{}}} {} {}\n", name, labels_[i], h.sum(k), stamps_[k]);
    }
    flush(kPiece);
  }
}

void Writer::write() {
  gauges();
  const size_t n = n_, last = pts_.empty() ? 0 : pts_.size() - 1;
  counter("vllm:num_preemptions",
          "Engine preemptions so far: running requests evicted for lack of KV blocks.",
          [&](size_t i, size_t k) {
            return k == last ? r_.replicas[i].counters.preemptions
                             : r_.replica_timeseries[k * n + i].s.preemptions;
          });
  counter("vllm:prompt_tokens",
          "Prompt tokens (each turn's whole context) of requests whose first token was emitted.",
          [&](size_t i, size_t k) { return counts(i).prompt.v[k]; });
  counter("vllm:generation_tokens", "Output tokens emitted.",
          [&](size_t i, size_t k) { return counts(i).gen.v[k]; });
  header("vllm:request_success", "counter",
         "Requests (turns) finished; stop: the turn reached its output length from the trace.");
  for (size_t i = 0; i < n; ++i) {
    const std::vector<int64_t>& stop = counts(i).success.v;
    for (const char* reason : {"stop", "length", "abort"})
      for (size_t k = 0; k < pts_.size(); ++k)
        fmt::format_to(std::back_inserter(out_),
                       "vllm:request_success_total{{{},finished_reason=\"{}\"}} {} {}\n",
                       labels_[i], reason, std::string(reason) == "stop" ? stop[k] : 0, stamps_[k]);
    flush(kPiece);
  }
  histogram("vllm:time_to_first_token_seconds",
            "First token minus the turn's start (its arrival, or the end of the intercept "
            "before it), observed at the first token.",
            true, &ReplicaCounts::ttft);
  histogram("vllm:inter_token_latency_seconds",
            "Gap between consecutive output tokens of a request, observed at the later token.",
            true, &ReplicaCounts::itl);
  histogram("vllm:time_per_output_token_seconds",
            "vllm:inter_token_latency_seconds under its name before vLLM 0.11.", true,
            &ReplicaCounts::itl);
  histogram("vllm:e2e_request_latency_seconds",
            "Last token minus the turn's start, observed at the last token.", true,
            &ReplicaCounts::e2e);
  histogram("vllm:request_prompt_tokens", "Prompt tokens of each finished request.", false,
            &ReplicaCounts::prompt_len);
  histogram("vllm:request_generation_tokens", "Output tokens of each finished request.", false,
            &ReplicaCounts::gen_len);
  fmt::format_to(std::back_inserter(out_), "# EOF\n");
  flush(0);
}

}  // namespace

std::vector<int64_t> buckets_1_2_5(int64_t max_value) {
  std::vector<int64_t> out;
  for (int64_t scale = 1; scale <= max_value; scale *= 10) {
    for (int64_t m : {1, 2, 5})
      if (m <= max_value / scale) out.push_back(m * scale);
    if (scale > max_value / 10) break;  // the next scale would pass it (or overflow)
  }
  return out;
}

void write_openmetrics(const cluster::RunResult& r, const OmOptions& o, const PutText& sink) {
  Writer(r, o, sink).write();
}

std::string openmetrics_text(const cluster::RunResult& r, const OmOptions& o) {
  std::string text;
  write_openmetrics(r, o, [&](std::string_view piece) { text += piece; });
  return text;
}

}  // namespace isim::exp
