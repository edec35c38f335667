#include "live/live_executor.h"

#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/input_error.h"
#include "kernels/runner/cuda_module.h"
#include "live/live_executor_impl.h"

namespace isim::live {

namespace detail {

Nanos LiveExecutor::transfer(int64_t bytes, int64_t copies, sim::Direction dir, bool duplex) {
  return model_.transfer(bytes, copies, dir, duplex);
}

void LiveExecutor::begin(const trace::Trace& trace, int64_t gpu_blocks, int64_t cpu_blocks) {
  const sim::Profile& p = model_.profile();
  trace_ = &trace;
  kernels::runner::RunnerConfig rc;
  rc.dims = kernels::runner::shard_dims(p.model, p.model.tp);
  rc.block_tokens = p.block_tokens;
  rc.num_blocks = gpu_blocks;
  rc.seed = options_.seed;
  rc.threads = options_.threads;
  if (backend_ == "cpu") {
    rc.dims.dtype = kernels::Dtype::kF32;
  } else if (p.model.dtype == "bf16" || p.model.dtype == "fp16") {
    rc.dims.dtype = p.model.dtype == "bf16" ? kernels::Dtype::kBF16 : kernels::Dtype::kF16;
  } else {
    throw InputError(
        fmt::format("{}: model.dtype {}: live-cuda runs bf16 or fp16", p.path, p.model.dtype));
  }
  dtype_ = rc.dims.dtype;
  const int64_t block_bytes = rc.dims.attention(rc.block_tokens).block_elems() *
                              kernels::dtype_bytes(dtype_) * 2 * rc.dims.layers;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double host = static_cast<double>(block_bytes) *
                      static_cast<double>(cpu_blocks + (backend_ == "cpu" ? gpu_blocks : 0)) / gib;
  if (host > options_.max_pool_gib)
    throw InputError(fmt::format(
        "engine.gpu_blocks / engine.cpu_blocks: the live KV pools would take {:.2f} GiB of host "
        "memory ({} GPU-tier{} and {} CPU-tier blocks of {} bytes), more than "
        "executor.max_pool_gib = {}; set engine.gpu_blocks and engine.cpu_blocks",
        host, gpu_blocks, backend_ == "cpu" ? "" : " (on the device)", cpu_blocks, block_bytes,
        options_.max_pool_gib));
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

sim::LiveTimes LiveExecutor::execute(const sim::LiveWork& work) {
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
    std::vector<uint64_t> sums =
        op.kind == KvOp::Kind::kSwapOut ? source_sums(op) : std::vector<uint64_t>{};
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

sim::ExecutorReport LiveExecutor::report() const {
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
    secs(iterations_
             ? std::chrono::duration_cast<std::chrono::nanoseconds>(last_ - started_).count()
             : Nanos{0}));
  f("integrity.swapped_blocks_checked", std::to_string(swap_checked_));
  f("integrity.recomputed_positions_checked", std::to_string(recompute_checked_));
  f("integrity.recompute_max_abs_error", fmt::format("{:g}", max_error_));
  f("integrity.recompute_tolerance", fmt::format("{:g}", tolerance_));
  f("integrity.violations", std::to_string(violation_count_));
  f("fault", options_.fault == "none" ? "none"
             : fault_note_.empty()    ? options_.fault + " (never triggered)"
                                      : fault_note_);
  rep.violations = violations_;
  rep.tokens.reserve(streams_.size());
  for (const Stream& s : streams_) rep.tokens.push_back(s.tokens);
  return rep;
}

}  // namespace detail

namespace {

using detail::LiveExecutor;
using detail::Options;

// `component` names the executor in the unknown-parameter error ("executor 'live-cpu'").
Options parse_options(const sim::ExecutorParams& params, const std::string& component) {
  Options o;
  o.threads = params.get<int32_t>(
      "threads", o.threads, in(0, 1024).because("more threads than any host's hardware threads"),
      "worker threads (0 = every hardware thread)");
  o.seed = params.get<uint64_t>("seed", o.seed, in(0, 18446744073709551615.0).because("64 bits"),
                                "seed of the live tensors");
  o.fault = params.get_choice("fault", o.fault, {"none", "swap", "recompute"});
  o.max_pool_gib = params.get<double>(
      "max_pool_gib", o.max_pool_gib,
      above_upto(0, 4096).because("4 TiB: more host memory than any machine here"),
      "largest host KV pool (GiB)");
  params.done(component);
  return o;
}

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
