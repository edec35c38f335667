#include "sim/live_log.h"

#include <stdexcept>

namespace isim::sim {

void LiveLog::dropped(const SessionState& s, int64_t n_cpu, int64_t n_gpu) {
  if (n_cpu + n_gpu == 0) return;
  KvOp op;
  op.kind = KvOp::Kind::kDrop;
  op.session = s.idx;
  op.kv_tokens = s.kv;
  const auto ncpu = static_cast<int64_t>(s.cpu_blocks.size());
  for (int64_t i = 0; i < n_cpu; ++i) {
    op.src.push_back(s.cpu_blocks[static_cast<size_t>(i)]);
    op.token_block.push_back(s.dropped_blocks + i);
    op.on_cpu.push_back(1);
  }
  for (int64_t i = 0; i < n_gpu; ++i) {
    op.src.push_back(s.gpu_blocks[static_cast<size_t>(i)]);
    op.token_block.push_back(s.dropped_blocks + ncpu + i);
    op.on_cpu.push_back(0);
  }
  if (!work_.ops.empty() && !work_.ops.back().sync)
    throw std::logic_error("live log: a drop after a pipelined swap in the same iteration");
  work_.ops.push_back(std::move(op));
}

void LiveLog::moved(const SessionState& s, bool to_cpu, bool sync, const std::vector<BlockId>& src,
                    const std::vector<BlockId>& dst, int64_t first_token_block) {
  if (src.size() != dst.size()) throw std::logic_error("live log: swap lists differ in length");
  if (sync && !work_.ops.empty() && !work_.ops.back().sync)
    throw std::logic_error("live log: a synchronous swap after a pipelined one");
  KvOp op;
  op.kind = to_cpu ? KvOp::Kind::kSwapOut : KvOp::Kind::kSwapIn;
  op.sync = sync;
  op.session = s.idx;
  op.src = src;
  op.dst = dst;
  for (size_t i = 0; i < src.size(); ++i)
    op.token_block.push_back(first_token_block + static_cast<int64_t>(i));
  work_.ops.push_back(std::move(op));
}

void LiveLog::build_steps(const std::vector<BatchEntry>& batch,
                          const std::function<const SessionState&(int32_t)>& session,
                          int64_t block_tokens, Nanos predicted_forward, bool with_prefill) {
  work_.steps.clear();
  work_.predicted_forward = predicted_forward;
  work_.with_prefill = with_prefill;
  auto table = [block_tokens](const SessionState& s, int64_t positions) {
    const auto n = static_cast<size_t>(blocks_for(positions, block_tokens));
    if (n > s.gpu_blocks.size()) throw std::logic_error("build_steps: block table too short");
    return std::vector<BlockId>(s.gpu_blocks.begin(), s.gpu_blocks.begin() + static_cast<long>(n));
  };
  for (const BatchEntry& e : batch) {
    const SessionState& s = session(e.h);
    // A step produces a token when it computes everything still pending (a decode step always
    // does: only the last emitted token lacks KV). The dropped lead is already re-allocated, so
    // what is pending is what follows it.
    const int64_t fresh = e.tokens - e.restore;
    const bool logits = fresh > 0 && s.pending_prefill(block_tokens) == fresh;
    if (e.restore > 0) {
      // The recomputed lead attends only to itself; it lands in the session's first blocks.
      work_.steps.push_back({s.idx, 0, e.restore, false, true, table(s, e.restore)});
      if (fresh == 0) continue;
    }
    work_.steps.push_back({s.idx, s.kv, fresh, logits, e.recompute, table(s, s.kv + fresh)});
  }
}

}  // namespace isim::sim
