// CostModel: turns a Profile into durations of batches and transfers.
//
// Contract:
// - `forward(batch)` is the iteration's forward time. Linear form: base + slope * total_tokens
//   (empty batch: 0). Tables form: layers * (dense(total_tokens) + decode_attention(num_decode,
//   decode_kv_tokens) + sum over prefill chunks of prefill_attention(chunk, kv_before))
//   + lm_head(num_logits) + overhead; terms with zero count are skipped. With
//   prefill_interpolation: per_pair, prefill_attention is interpolated as time per attended
//   pair and scaled by the chunk's pairs (chunk x kv_before + chunk(chunk+1)/2).
//   With a mixed_attention_us table and a batch holding both decodes and a prefill chunk, the
//   chunk with the most attended pairs (the first on a tie) and all decodes are priced together
//   as mixed(chunk, kv_before, num_decode, decode_kv_tokens / num_decode) in place of their
//   separate terms; any other chunk keeps its prefill_attention term. The table was measured with
//   one chunk per batch; varlen attention work adds per sequence, so pricing the other chunks
//   apart keeps their attended pairs right (merging chunks into one, as LLMServingSim does,
//   would add cross pairs c1 x kv2 + c2 x kv1 + c1 x c2 that no kernel computes).
//   With an allreduce_us curve (tp > 1), each layer adds 2 x allreduce(total_tokens x hidden x
//   dtype_bytes).
//   A MoE model (model.moe given) adds moe.moe_layers(layers) x moe_layer(total_tokens)
//   (sim/cost_moe.h: measured moe_us at the expected distinct experts, else the grouped-GEMM
//   roofline); dense_us already holds what every layer runs outside attention and the MoE block.
//   With a decode_skew table and decodes of unequal KV (decode_kv_max above the mean), the decode
//   attention term t_mean (at the mean KV, as above; the mixed term when the decodes run with a
//   chunk) becomes max(0, t_mean + alpha x (t_max - t_mean)), t_max the same term with every
//   decode at decode_kv_max, alpha from sim/cost_moe.h's SkewLookup at pc and kp = the tokens
//   and cached KV of the chunk with the most attended pairs (0, 0 without a chunk), n =
//   num_decode, kv_big = decode_kv_max. Without the table (or with decode_kv_max unset), the
//   batch is priced at its mean KV.
// - `parts(batch)`: forward()'s terms, all layers summed: dense (dense_us), attention (decode
//   and prefill, mixed when joint), allreduce, MoE (CostModel::moe's term), lm_head and overhead,
//   and `total`, forward()'s very value (forward() returns it). The terms add up to total but
//   for the rounding of the sum to whole ns. The linear form puts its whole time in dense_us.
// - `transfer(bytes, copies, dir, duplex)`: copies * per_copy_overhead + bytes / bw(bytes per
//   copy), with bw from the direction's curve, times duplex_factor when `duplex`.
//   copy_bandwidth(bytes per copy, dir) is that bw: the curve's value, but never below the
//   slowest bandwidth the curve measured (`clamped`: extrapolating a falling curve past its
//   last point can reach 0); `extrapolated` when the size lies outside the curve's points.
// - `T(x)`: iteration time for x batched prefill tokens (kv 0), as min-waste uses it;
//   `marginal_ns_per_token()`: the slope a of T around saturation.
// - `recompute_cost(chunk, kv_before)`: a * chunk + the chunk's prefill attention over kv_before.
// - Every evaluation outside a measured grid increments `extrapolations()` (a step priced but
//   not run takes its count back: take_back_extrapolations). Outside the grid a
//   time term is kept on the physical side of the grid's edge (sim/interp.h eval_rising): past
//   the last point of a token (or byte, or expert) axis never below the time at that point,
//   before the first never above the time at the first. Decode attention is rising along its KV
//   axis only (at equal total KV, more sequences may cost less); the mixed 4-D table is not
//   bounded.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/cost_moe.h"
#include "sim/profile.h"
#include "sim/time.h"

namespace isim::sim {

// What the cost model needs to know about one iteration's batch.
struct BatchShape {
  int64_t total_tokens = 0;      // decode tokens + prefill chunk tokens
  int32_t num_decode = 0;        // sequences decoding one token
  int64_t decode_kv_tokens = 0;  // sum of KV tokens those decodes attend to
  // The largest and smallest KV of one decode (the ragged-decode correction reads them; left 0,
  // a batch is priced at its mean KV as before).
  int64_t decode_kv_max = 0;
  int64_t decode_kv_min = 0;
  int32_t num_logits = 0;  // sequences that produce a token this iteration
  struct Chunk {
    int64_t tokens = 0;     // new tokens prefilled
    int64_t kv_before = 0;  // KV tokens of the same sequence already cached
  };
  std::vector<Chunk> prefills;

  void clear() {
    total_tokens = 0;
    num_decode = 0;
    decode_kv_tokens = 0;
    decode_kv_max = 0;
    decode_kv_min = 0;
    num_logits = 0;
    prefills.clear();
  }
};

// One forward's time by term (CostModel::parts), microseconds over all layers.
struct ForwardParts {
  double dense_us = 0, attention_us = 0, allreduce_us = 0, moe_us = 0, lm_head_us = 0,
         overhead_us = 0;
  Nanos total = 0;  // forward()
};

enum class Direction { kDeviceToHost, kHostToDevice };

struct CopyBandwidth {
  double gbps = 0;        // what transfer() divides by (before the duplex factor)
  double curve_gbps = 0;  // the curve's own value there (below gbps when clamped)
  bool extrapolated = false;
  bool clamped = false;
};

class CostModel {
 public:
  explicit CostModel(const Profile& p);

  Nanos forward(const BatchShape& b) const;
  ForwardParts parts(const BatchShape& b) const;
  Nanos transfer(int64_t bytes, int64_t copies, Direction dir, bool duplex = false) const;
  CopyBandwidth copy_bandwidth(double bytes_per_copy, Direction dir) const;
  Nanos T(int64_t tokens) const;
  double marginal_ns_per_token() const;
  // Estimates for policies and reports, not steps priced: neither counts an extrapolation.
  // attention: a prefill chunk's attention time (all layers) over `kv_before` cached tokens of
  // the same sequence; 0 for the linear form, which has no attention term.
  Nanos attention(int64_t chunk, int64_t kv_before) const;
  // recompute_cost: what computing `chunk` tokens after `kv_before` cached ones costs, as
  // Pensieve prices a chunk: marginal_ns_per_token() x chunk + attention(chunk, kv_before).
  Nanos recompute_cost(int64_t chunk, int64_t kv_before) const;
  // The MoE layers' part of forward() for a batch of `tokens` (all layers, 0 for a dense
  // model or the linear form): what a lockstep group replaces by its own MoE step.
  Nanos moe(int64_t tokens) const;
  int64_t saturation_tokens() const { return profile_.saturation_tokens; }
  const Profile& profile() const { return profile_; }
  int64_t extrapolations() const { return extrapolations_; }
  // A step priced ahead and then not run (sim/decode_run.h) takes its count back: the count
  // returns to `count`, a value extrapolations() gave before.
  void take_back_extrapolations(int64_t count) const { extrapolations_ = count; }

 private:
  // Every MoE layer of a batch of `tokens` (us): the term forward() and moe() share.
  double moe_layers_us(int64_t tokens, bool* outside) const;
  double prefill_attention_us(int64_t chunk, int64_t kv_before, bool* outside) const;

  Profile profile_;
  Grid2D prefill_per_pair_;  // prefill_attention_us / pairs, when per_pair
  SkewLookup skew_;
  mutable int64_t extrapolations_ = 0;
  mutable double marginal_ns_ = -1;  // marginal_ns_per_token(), once recompute_cost asks
};

}  // namespace isim::sim
