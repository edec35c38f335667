// The live executor class, shared by its two files: live_executor.cpp (the life cycle: begin,
// execute, transfer, report; and the registration) and live_executor_checks.cpp (the
// integrity side: token streams, dropped KV kept, checksums of swapped blocks, recomputed KV).
// Internal to live/; the contract is live/live_executor.h's.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "core/input_error.h"
#include "kernels/runner/cuda_module.h"
#include "kernels/runner/kv_tiers.h"
#include "kernels/runner/runner.h"
#include "kernels/runner/shard.h"
#include "live/integrity.h"
#include "live/live_executor.h"
#include "sim/cost_model.h"

namespace isim::live::detail {

using Clock = std::chrono::steady_clock;
using sim::KvOp;
using sim::Nanos;

struct Options {
  int threads = 1;  // as isim-calibrate measures the CPU backend
  uint64_t seed = 1;
  std::string fault = "none";
  double max_pool_gib = 16;
};

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
  Nanos transfer(int64_t bytes, int64_t copies, sim::Direction dir, bool duplex) override;
  const sim::CostModel& cost_model() const override { return model_; }
  bool live() const override { return true; }

  void begin(const trace::Trace& trace, int64_t gpu_blocks, int64_t cpu_blocks) override;
  sim::LiveTimes execute(const sim::LiveWork& work) override;
  sim::ExecutorReport report() const override;

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
  void extend_inputs(int32_t session, int64_t end);

  void produce(int32_t session, int64_t position, int32_t token);
  kernels::runner::Step runner_step(const sim::LiveStep& s);

  // The sampled KV (first and last layer, K and V) of one slot of a block read into `bytes`.
  std::vector<float> sample(const std::vector<std::byte>& bytes, int32_t slot) const;

  void keep_dropped(const KvOp& op);
  std::vector<uint64_t> source_sums(const KvOp& op);
  void after_copy(const KvOp& op, const std::vector<uint64_t>& sums);
  void check_recomputed(const sim::LiveStep& s);

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

}  // namespace isim::live::detail
