// LiveLog: what a replica tells a live executor, kept beside the engine as an observer of its
// KV operations.
//
// Contract:
// - `dropped` and `moved` are called by the engine at each KV operation it decides, in
//   decision order, with block ids of its pools (which map one to one onto the executor's real
//   pools). Every synchronous op and drop precedes every pipelined swap of an iteration;
//   breaking that order is a std::logic_error (an engine bug).
// - `build_steps` turns the iteration's batch into real steps (block tables, positions,
//   logits) and `take` hands the whole LiveWork to the executor, clearing the log.
// - The sim executor never needs one: the engine keeps no log then.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/executor.h"
#include "sim/session_state.h"

namespace isim::sim {

// One session's share of an iteration's batch.
struct BatchEntry {
  int32_t h;  // the session's handle on its replica
  int64_t tokens;
  bool decode;
  bool recompute;
  int64_t restore;           // leading dropped tokens recomputed within `tokens`
  int64_t restore_from = 0;  // the token position they start at (>0: a lead rebuilt in pieces)
};

class LiveLog {
 public:
  // Drops of the n_cpu leading CPU blocks and the n_gpu leading GPU blocks of `s`.
  void dropped(const SessionState& s, int64_t n_cpu, int64_t n_gpu);
  void moved(const SessionState& s, bool to_cpu, bool sync, const std::vector<BlockId>& src,
             const std::vector<BlockId>& dst, int64_t first_token_block);
  void build_steps(const std::vector<BatchEntry>& batch,
                   const std::function<const SessionState&(int32_t)>& session, int64_t block_tokens,
                   Nanos predicted_forward, bool with_prefill);
  const LiveWork& work() const { return work_; }
  void clear() {
    work_.ops.clear();
    work_.steps.clear();
  }

 private:
  LiveWork work_;
};

}  // namespace isim::sim
