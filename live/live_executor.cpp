#include "live/live_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "calibrate/measure.h"
#include "core/input_error.h"
#include "kernels/runner/cuda_module.h"
#include "kernels/runner/kv_tiers.h"
#include "kernels/runner/runner.h"
#include "live/integrity.h"

namespace isim::live {
namespace {

using Clock = std::chrono::steady_clock;
using sim::KvOp;
using sim::Nanos;

struct Options {
  int threads = 1;  // as isim-calibrate measures the CPU backend
  uint64_t seed = 1;
  std::string fault = "none";
  double max_pool_gib = 16;
};

// `component` names the executor in the unknown-parameter error ("executor 'live-cpu'").
Options parse_options(const sim::ExecutorParams& params, const std::string& component) {
  Options o;
  o.threads =
      params.get<int32_t>("threads", o.threads, "a thread count >= 0 (0 = every hardware thread)",
                          [](int32_t n) { return n >= 0; });
  o.seed = params.get<uint64_t>("seed", o.seed);
  o.fault = params.get_choice("fault", o.fault, {"none", "swap", "recompute"});
  o.max_pool_gib = params.get<double>("max_pool_gib", o.max_pool_gib, "a number of GiB > 0",
                                      [](double g) { return g > 0; });
  params.done(component);
  return o;
}

// Per session: its token stream and the KV kept from its dropped blocks.
struct Stream {
  std::vector<int32_t> tokens;
  int32_t seg = 0;      // segment whose input is being appended or outputs produced
  int64_t inputs = 0;   // input tokens of `seg` appended so far
  int64_t outputs = 0;  // outputs of `seg` produced so far
  std::unordered_map<int64_t, std::vector<float>> kept;  // position -> first/last layer K, V
};

class LiveExecutor final : public sim::Executor {
 public:
  LiveExecutor(const sim::Profile& p, Options o, std::string backend)
      : model_(p), options_(std::move(o)), backend_(std::move(backend)) {}

  std::string name() const override { return "live-" + backend_; }
  Nanos run(const sim::BatchShape& batch) override { return model_.forward(batch); }
  Nanos transfer(int64_t bytes, int64_t copies, sim::Direction dir, bool duplex) override {
    return model_.transfer(bytes, copies, dir, duplex);
  }
  const sim::CostModel& cost_model() const override { return model_; }
  bool live() const override { return true; }

  void begin(const trace::Trace& trace, int64_t gpu_blocks, int64_t cpu_blocks) override {
    const sim::Profile& p = model_.profile();
    trace_ = &trace;
    kernels::runner::RunnerConfig rc;
    rc.dims = calib::shard_dims(p.model, p.model.tp);
    rc.block_tokens = p.block_tokens;
    rc.num_blocks = gpu_blocks;
    rc.seed = options_.seed;
    rc.threads = options_.threads;
    if (backend_ == "cpu") {
      rc.dims.dtype = kernels::Dtype::kF32;
    } else if (p.model.dtype == "bf16" || p.model.dtype == "fp16") {
      rc.dims.dtype = p.model.dtype == "bf16" ? kernels::Dtype::kBF16 : kernels::Dtype::kF16;
    } else {
      throw InputError(fmt::format("{}: model.dtype {}: live-cuda runs bf16 or fp16", p.path,
                                   p.model.dtype));
    }
    dtype_ = rc.dims.dtype;
    const int64_t block_bytes = rc.dims.attention(rc.block_tokens).block_elems() *
                                kernels::dtype_bytes(dtype_) * 2 * rc.dims.layers;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const double host =
        static_cast<double>(block_bytes) *
        static_cast<double>(cpu_blocks + (backend_ == "cpu" ? gpu_blocks : 0)) / gib;
    if (host > options_.max_pool_gib)
      throw InputError(fmt::format(
          "engine.gpu_blocks / engine.cpu_blocks: the live KV pools would take {:.2f} GiB of host "
          "memory ({} GPU-tier{} and {} CPU-tier blocks of {} bytes), more than "
          "executor.max_pool_gib = {}; set engine.gpu_blocks and engine.cpu_blocks",
          host, gpu_blocks, backend_ == "cpu" ? "" : " (on the device)", cpu_blocks,
          block_bytes, options_.max_pool_gib));
    try {
      if (backend_ == "cpu") {
        runner_ = kernels::runner::make_cpu_runner(rc);
        tiers_ = kernels::runner::make_cpu_tiers(*runner_, cpu_blocks);
      } else {
        const auto* cuda = kernels::runner::cuda_module(nullptr);
        if (!cuda) throw std::logic_error("live-cuda created without the CUDA module");
        runner_ = cuda->make_runner(rc);
        tiers_ = cuda->make_tiers(*runner_, cpu_blocks);
      }
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("{}: model: {}", p.path, e.what()));
    } catch (const std::runtime_error& e) {
      // CUDA allocation failures (kernels::cuda::CudaError): the pools or weights do not fit.
      throw InputError(fmt::format(
          "live-{}: could not set up the model and KV pools ({} GPU-tier and {} CPU-tier blocks "
          "of {} bytes): {}; lower engine.gpu_blocks / engine.cpu_blocks",
          backend_, gpu_blocks, cpu_blocks, block_bytes, e.what()));
    }
    block_tokens_ = rc.block_tokens;
    vocab_ = rc.dims.vocab;
    const int64_t planes = 2 * int64_t{rc.dims.layers};
    sample_planes_ = {0, 1};
    if (planes > 2) sample_planes_.insert(sample_planes_.end(), {planes - 2, planes - 1});
    kv_heads_ = rc.dims.kv_heads;
    head_dim_ = rc.dims.head_dim;
    tolerance_ = recompute_tolerance(dtype_);
    load_begin_ = load_average();
    streams_.assign(trace.size(), Stream{});
    cpu_sum_.assign(static_cast<size_t>(cpu_blocks), 0);
    started_ = Clock::now();
  }

  sim::LiveTimes execute(const sim::LiveWork& work) override {
    sim::LiveTimes out;
    std::vector<kernels::runner::BlockMoves> async;
    std::vector<const KvOp*> async_ops;
    std::vector<std::vector<uint64_t>> async_sums;
    for (const KvOp& op : work.ops) {
      if (op.kind == KvOp::Kind::kDrop) {
        keep_dropped(op);
        continue;
      }
      // Swap-out sources are checksummed before any copy can reuse their blocks.
      std::vector<uint64_t> sums = op.kind == KvOp::Kind::kSwapOut ? source_sums(op)
                                                                   : std::vector<uint64_t>{};
      kernels::runner::BlockMoves m{op.kind == KvOp::Kind::kSwapOut, op.src, op.dst};
      if (!op.sync) {
        async.push_back(std::move(m));
        async_ops.push_back(&op);
        async_sums.push_back(std::move(sums));
        continue;
      }
      const Nanos t = tiers_->copy_now({m});
      out.stall += t;
      copy_ns_ += t;
      after_copy(op, sums);
    }

    std::vector<kernels::runner::Step> steps;
    steps.reserve(work.steps.size());
    for (const sim::LiveStep& s : work.steps) steps.push_back(runner_step(s));
    kernels::runner::StepOptions so;
    so.time_phases = backend_ == "cuda";
    const auto t0 = Clock::now();
    tiers_->copy_start(async);
    kernels::runner::StepResult r;
    Nanos forward = 0;
    if (!steps.empty()) {
      const auto f0 = Clock::now();
      r = runner_->step(steps, so);
      forward = backend_ == "cuda" ? sim::from_us(r.times.total_us) : since(f0);
    }
    const Nanos copies = tiers_->copy_wait();
    const Nanos wall = since(t0);
    copy_ns_ += copies;
    out.forward = forward;
    if (async.empty())
      out.busy = forward;
    else
      out.busy = backend_ == "cuda" ? std::max(forward, copies) : wall;
    compute_ns_ += forward;
    if (forward > 0) {
      // What the profile predicted for this very batch (the engine's estimate): the simulator's
      // error, iteration by iteration, without the feedback of diverging schedules.
      predicted_ns_ += work.predicted_forward;
      (work.with_prefill ? mixed_err_ : decode_err_).add(work.predicted_forward, forward);
    }
    stall_ns_ += out.stall;
    busy_ns_ += out.busy;
    ++iterations_;

    // Tokens produced, then the checks of this iteration's copies and recomputes.
    size_t next = 0;
    for (const sim::LiveStep& s : work.steps) {
      if (!s.logits) continue;
      if (next >= r.tokens.size()) throw std::logic_error("live: runner returned too few tokens");
      produce(s.session, s.kv_before + s.tokens, r.tokens[next++]);
    }
    for (size_t i = 0; i < async_ops.size(); ++i) after_copy(*async_ops[i], async_sums[i]);
    for (const sim::LiveStep& s : work.steps) check_recomputed(s);
    last_ = Clock::now();
    return out;
  }

  sim::ExecutorReport report() const override {
    sim::ExecutorReport rep;
    rep.live = true;
    auto f = [&](const std::string& k, const std::string& v) { rep.facts.emplace_back(k, v); };
    auto secs = [](Nanos n) { return fmt::format("{:.6f}", sim::to_seconds(n)); };
    f("backend", backend_);
    f("threads", std::to_string(options_.threads));
    f("iterations_executed", std::to_string(iterations_));
    f("compute_s", secs(compute_ns_));
    f("swap_copy_s", secs(copy_ns_));
    f("stall_s", secs(stall_ns_));
    f("busy_s", secs(busy_ns_));
    f("predicted_compute_s", secs(predicted_ns_));
    // Other work on the machine slows what live measures; the load average says how busy it was.
    f("host_load_begin", load_begin_);
    f("host_load_end", load_average());
    f("hardware_threads", std::to_string(std::thread::hardware_concurrency()));
    f("decode_only.iterations", std::to_string(decode_err_.n));
    f("decode_only.mean_rel_error", fmt::format("{:.4f}", decode_err_.mean()));
    f("with_prefill.iterations", std::to_string(mixed_err_.n));
    f("with_prefill.mean_rel_error", fmt::format("{:.4f}", mixed_err_.mean()));
    f("real_s",
      secs(iterations_ ? std::chrono::duration_cast<std::chrono::nanoseconds>(last_ - started_)
                             .count()
                       : Nanos{0}));
    f("integrity.swapped_blocks_checked", std::to_string(swap_checked_));
    f("integrity.recomputed_positions_checked", std::to_string(recompute_checked_));
    f("integrity.recompute_max_abs_error", fmt::format("{:g}", max_error_));
    f("integrity.recompute_tolerance", fmt::format("{:g}", tolerance_));
    f("integrity.violations", std::to_string(violation_count_));
    f("fault", options_.fault == "none" ? "none" : fault_note_.empty()
                                                       ? options_.fault + " (never triggered)"
                                                       : fault_note_);
    rep.violations = violations_;
    rep.tokens.reserve(streams_.size());
    for (const Stream& s : streams_) rep.tokens.push_back(s.tokens);
    return rep;
  }

 private:
  // The 1-minute load average ("" where /proc/loadavg cannot be read).
  static std::string load_average() {
    std::ifstream f("/proc/loadavg");
    std::string first;
    f >> first;
    return first;
  }
  static Nanos since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  }

  const trace::Session& src(int32_t session) const {
    return (*trace_)[static_cast<size_t>(session)];
  }
  std::string where(int32_t session, int64_t position) const {
    const trace::Session& s = src(session);
    const TokenPlace at = place_of(s, position);
    return fmt::format("session {} segment {} position {} ({} token {})", s.id, at.segment,
                       position, at.output ? "output" : "input", at.index);
  }
  void violation(std::string what) {
    ++violation_count_;
    if (violations_.size() < 200) violations_.push_back(std::move(what));
  }

  // Appends the session's next input tokens until its stream holds `end` positions.
  void extend_inputs(int32_t session, int64_t end) {
    Stream& st = streams_[static_cast<size_t>(session)];
    const trace::Session& s = src(session);
    while (static_cast<int64_t>(st.tokens.size()) < end) {
      if (st.seg >= static_cast<int32_t>(s.segments.size()) ||
          st.inputs >= s.segments[static_cast<size_t>(st.seg)].input)
        throw std::logic_error(fmt::format(
            "live: session {} needs position {} before it was produced (segment {}, {} inputs and "
            "{} outputs of it so far)",
            s.id, st.tokens.size(), st.seg, st.inputs, st.outputs) +
            (violations_.empty() ? "" : "; first violation: " + violations_.front()));
      st.tokens.push_back(input_token(s, static_cast<int64_t>(st.tokens.size()), vocab_));
      ++st.inputs;
    }
  }

  void produce(int32_t session, int64_t position, int32_t token) {
    Stream& st = streams_[static_cast<size_t>(session)];
    const trace::Session& s = src(session);
    if (position != static_cast<int64_t>(st.tokens.size())) {
      violation(fmt::format("{}: a token was produced for position {} but the stream holds {}",
                            where(session, position), position, st.tokens.size()));
      return;
    }
    st.tokens.push_back(token);
    ++st.outputs;
    if (st.seg < static_cast<int32_t>(s.segments.size()) &&
        st.outputs == s.segments[static_cast<size_t>(st.seg)].output) {
      ++st.seg;
      st.inputs = 0;
      st.outputs = 0;
    }
  }

  kernels::runner::Step runner_step(const sim::LiveStep& s) {
    extend_inputs(s.session, s.kv_before + s.tokens);
    Stream& st = streams_[static_cast<size_t>(s.session)];
    kernels::runner::Step step;
    step.kv_before = s.kv_before;
    step.logits = s.logits;
    step.blocks.assign(s.blocks.begin(), s.blocks.end());
    step.tokens.assign(st.tokens.begin() + s.kv_before,
                       st.tokens.begin() + s.kv_before + s.tokens);
    if (options_.fault == "recompute" && fault_note_.empty() && s.recompute) {
      for (int64_t i = 0; i < s.tokens; ++i) {
        if (!st.kept.count(s.kv_before + i)) continue;
        auto& t = step.tokens[static_cast<size_t>(i)];
        t = (t + 1) % vocab_;
        fault_note_ = "recompute: wrong token fed at " + where(s.session, s.kv_before + i);
        break;
      }
    }
    return step;
  }

  // The sampled KV (first and last layer, K and V) of one slot of a block read into `bytes`.
  std::vector<float> sample(const std::vector<std::byte>& bytes, int32_t slot) const {
    std::vector<float> v;
    const int64_t elem = kernels::dtype_bytes(dtype_);
    const int64_t plane_bytes = tiers_->block_bytes();
    for (int64_t plane : sample_planes_)
      for (int32_t h = 0; h < kv_heads_; ++h)
        for (int32_t d = 0; d < head_dim_; ++d) {
          const int64_t e = (int64_t{h} * block_tokens_ + slot) * head_dim_ + d;
          const std::byte* at = bytes.data() + plane * plane_bytes + e * elem;
          if (dtype_ == kernels::Dtype::kF32) {
            float x;
            std::memcpy(&x, at, 4);
            v.push_back(x);
          } else {
            uint16_t x;
            std::memcpy(&x, at, 2);
            v.push_back(kernels::half_to_float(dtype_, x));
          }
        }
    return v;
  }

  void keep_dropped(const KvOp& op) {
    Stream& st = streams_[static_cast<size_t>(op.session)];
    std::vector<std::byte> bytes;
    for (size_t i = 0; i < op.src.size(); ++i) {
      const int64_t first = op.token_block[i] * block_tokens_;
      const int64_t valid = std::min<int64_t>(block_tokens_, op.kv_tokens - first);
      if (valid <= 0) continue;
      tiers_->read(op.on_cpu[i] != 0, op.src[i], bytes);
      for (int32_t t = 0; t < valid; ++t)
        if (!st.kept.count(first + t)) st.kept.emplace(first + t, sample(bytes, t));
    }
  }

  std::vector<uint64_t> source_sums(const KvOp& op) {
    std::vector<uint64_t> sums;
    std::vector<std::byte> bytes;
    for (int32_t b : op.src) {
      tiers_->read(false, b, bytes);
      sums.push_back(block_checksum(bytes));
    }
    return sums;
  }

  void after_copy(const KvOp& op, const std::vector<uint64_t>& sums) {
    std::vector<std::byte> bytes;
    const bool out = op.kind == KvOp::Kind::kSwapOut;
    for (size_t i = 0; i < op.src.size(); ++i) {
      tiers_->read(/*cpu_tier=*/out, op.dst[i], bytes);
      const uint64_t got = block_checksum(bytes);
      const uint64_t want = out ? sums[i] : cpu_sum_[static_cast<size_t>(op.src[i])];
      ++swap_checked_;
      const int64_t pos = op.token_block[i] * block_tokens_;
      if (got != want)
        violation(fmt::format(
            "{}: {} of token block {} ({} block {} -> {} block {}): checksum {:016x}, expected "
            "{:016x} (the block {})",
            where(op.session, pos), out ? "swap-out" : "swap-in", op.token_block[i],
            out ? "GPU" : "CPU", op.src[i], out ? "CPU" : "GPU", op.dst[i], got, want,
            out ? "was copied wrong" : "did not come back as it was swapped out"));
      if (!out) continue;
      cpu_sum_[static_cast<size_t>(op.dst[i])] = sums[i];
      if (options_.fault == "swap" && fault_note_.empty()) {
        bytes[bytes.size() / 2] ^= std::byte{0x10};
        tiers_->write(true, op.dst[i], bytes);
        fault_note_ = fmt::format("swap: CPU copy of CPU block {} corrupted ({})", op.dst[i],
                                  where(op.session, pos));
      }
    }
  }

  void check_recomputed(const sim::LiveStep& s) {
    Stream& st = streams_[static_cast<size_t>(s.session)];
    if (st.kept.empty()) return;
    const int64_t end = s.kv_before + s.tokens;
    std::vector<std::byte> bytes;
    bool reported = false;
    for (size_t j = 0; j < s.blocks.size(); ++j) {
      const int64_t first = static_cast<int64_t>(j) * block_tokens_;
      bool any = false;
      for (int64_t p = first; p < std::min(end, first + block_tokens_) && !any; ++p)
        any = st.kept.count(p) != 0;
      if (!any) continue;
      tiers_->read(false, s.blocks[j], bytes);
      for (int64_t p = first; p < std::min(end, first + block_tokens_); ++p) {
        auto it = st.kept.find(p);
        if (it == st.kept.end()) continue;
        const std::vector<float> now = sample(bytes, static_cast<int32_t>(p - first));
        ++recompute_checked_;
        for (size_t e = 0; e < now.size(); ++e) {
          const double err = std::fabs(double{now[e]} - double{it->second[e]});
          max_error_ = std::max(max_error_, err);
          if (reported || within_tolerance(tolerance_, it->second[e], now[e])) continue;
          const size_t per_plane = static_cast<size_t>(kv_heads_) * head_dim_;
          const int64_t plane = sample_planes_[e / per_plane];
          violation(fmt::format(
              "{}: recomputed KV differs from the original: layer {} {} head {} dim {}: {} vs "
              "{} (tolerance {:g})",
              where(s.session, p), plane / 2, plane % 2 ? "V" : "K",
              (e % per_plane) / static_cast<size_t>(head_dim_), e % static_cast<size_t>(head_dim_),
              now[e], it->second[e], tolerance_));
          reported = true;
        }
        st.kept.erase(it);
      }
    }
  }

  sim::CostModel model_;
  Options options_;
  std::string backend_;
  const trace::Trace* trace_ = nullptr;
  std::unique_ptr<kernels::runner::Runner> runner_;
  std::unique_ptr<kernels::runner::KvTiers> tiers_;
  kernels::Dtype dtype_ = kernels::Dtype::kF32;
  int32_t block_tokens_ = 16, vocab_ = 1, kv_heads_ = 1, head_dim_ = 1;
  std::vector<int64_t> sample_planes_;
  double tolerance_ = 0;
  std::vector<Stream> streams_;
  std::vector<uint64_t> cpu_sum_;  // checksum each CPU block was swapped out with

  std::vector<std::string> violations_;
  int64_t violation_count_ = 0;
  std::string fault_note_;
  int64_t swap_checked_ = 0, recompute_checked_ = 0;
  double max_error_ = 0;
  // Signed relative error (predicted - measured) / measured of the profile's forward time.
  struct ErrorSum {
    int64_t n = 0;
    double sum = 0;
    void add(Nanos predicted, Nanos measured) {
      ++n;
      sum += static_cast<double>(predicted - measured) / static_cast<double>(measured);
    }
    double mean() const { return n ? sum / static_cast<double>(n) : 0.0; }
  };
  ErrorSum decode_err_, mixed_err_;
  Nanos predicted_ns_ = 0;
  std::string load_begin_;
  Nanos compute_ns_ = 0, copy_ns_ = 0, stall_ns_ = 0, busy_ns_ = 0;
  int64_t iterations_ = 0;
  Clock::time_point started_{}, last_{};
};

void check_device(const std::string& backend, const sim::ExecutorParams& params) {
  if (backend != "cuda") return;
  std::string why;
  const auto* cuda = kernels::runner::cuda_module(&why);
  if (!cuda) throw InputError(params.where + ": live-cuda: " + why + "; use live-cpu");
  const auto info = cuda->device_info();
  if (!info.available)
    throw InputError(params.where + ": live-cuda needs a CUDA device: " + info.why);
}

std::unique_ptr<sim::Executor> make(const sim::Profile& p, const sim::ExecutorParams& params,
                                    const std::string& backend) {
  Options o = parse_options(params, "executor 'live-" + backend + "'");
  check_device(backend, params);
  return std::make_unique<LiveExecutor>(p, std::move(o), backend);
}

}  // namespace

void check_executor(const std::string& name, const sim::ExecutorParams& params) {
  if (name == "live-cpu" || name == "live-cuda") {
    parse_options(params, "executor '" + name + "'");
    check_device(name == "live-cpu" ? "cpu" : "cuda", params);
  } else {
    params.done("executor '" + name + "'");
  }
}

void add_live_executors(sim::ExecutorRegistry& reg) {
  reg.add("live-cpu",
          "runs the synthetic transformer on the CPU over a real paged KV pool and measures it "
          "(virtual time, integrity checks)",
          [](const sim::Profile& p, const sim::ExecutorParams& params) {
            return make(p, params, "cpu");
          });
  reg.add("live-cuda",
          "the same on a CUDA device: our paged attention, cuBLAS, pinned swaps on a copy stream",
          [](const sim::Profile& p, const sim::ExecutorParams& params) {
            return make(p, params, "cuda");
          });
}

const sim::ExecutorRegistry& executor_registry() {
  static const sim::ExecutorRegistry r = [] {
    sim::ExecutorRegistry reg("executor");
    sim::add_sim_executor(reg);
    add_live_executors(reg);
    return reg;
  }();
  return r;
}

}  // namespace isim::live
