// The host-side plan of one iteration, shared by the runner backends: validates a batch and lays
// its rows out decode steps first (in step order), then prefill chunks (in step order), with the
// page tables the attention and append kernels take.
//
// Contract: plan_batch throws std::invalid_argument naming the step and field for an empty step,
// a block table of the wrong length, a block id outside the pool or a negative kv_before.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/runner/runner.h"

namespace isim::kernels::runner {

struct TableArrays {
  std::vector<int32_t> indptr{0};
  std::vector<int32_t> indices;
  std::vector<int32_t> last_page_len;
  std::vector<int32_t> qo_indptr{0};  // rows of each sequence, relative to the group's first row
  int32_t max_q_len = 0;

  int32_t batch() const { return static_cast<int32_t>(last_page_len.size()); }
  PageTable view() const { return {indptr.data(), indices.data(), last_page_len.data(), batch()}; }
};

struct BatchPlan {
  int64_t rows = 0;
  int64_t decode_rows = 0;          // rows [0, decode_rows) are decode steps
  std::vector<int32_t> token_ids;   // [rows]
  std::vector<int32_t> positions;   // [rows]: absolute position of each new token
  TableArrays decode;               // the decode steps
  TableArrays prefill;              // the chunks; rows start at decode_rows
  std::vector<int64_t> logit_rows;  // last row of each step asking for logits, in step order
};

BatchPlan plan_batch(const std::vector<Step>& batch, const RunnerConfig& config);

}  // namespace isim::kernels::runner
