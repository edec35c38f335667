// Reading the profile's optional serving sections: `step_overhead:` (per-step CPU time) and
// `memory:` (what a vLLM server subtracts before its KV cache). Absent sections read as all zero
// (profile_write.cpp writes neither then, so older profiles keep their bytes).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "sim/profile_reader.h"

namespace isim::sim::profile_io {

namespace {

const Names kOverheadKeys = {"fixed_us", "per_sequence_us", "per_token_us"};
const Names kMemoryKeys = {"usable_gib",
                           "weights_extra_bytes",
                           "activation_bytes_per_token",
                           "sampler_bytes_per_sequence",
                           "sampler_bytes_per_token",
                           "non_torch_gib",
                           "cuda_graph_gib"};

}  // namespace

void read_serving(const Reader& r, const MapNode& top, Profile& p) {
  if (Reader::find(top, "step_overhead")) {
    const MapNode m = r.section(top, "step_overhead", kOverheadKeys);
    StepOverhead& o = p.step_overhead;
    o.fixed_us = r.number(m, "fixed_us", Bound::kNonNegative, "a time");
    o.per_sequence_us = r.number(m, "per_sequence_us", Bound::kNonNegative, "a time");
    o.per_token_us = r.number(m, "per_token_us", Bound::kNonNegative, "a time");
  }
  if (Reader::find(top, "memory")) {
    const MapNode m = r.section(top, "memory", kMemoryKeys);
    MemorySpec& s = p.memory;
    s.given = true;
    s.usable_gib = r.number(m, "usable_gib", Bound::kPositive, "a size in GiB");
    s.weights_extra_bytes = r.number(m, "weights_extra_bytes", Bound::kNonNegative, "a size");
    s.activation_bytes_per_token =
        r.number(m, "activation_bytes_per_token", Bound::kNonNegative, "a size");
    s.sampler_bytes_per_sequence =
        r.number(m, "sampler_bytes_per_sequence", Bound::kNonNegative, "a size");
    if (Reader::find(m, "sampler_bytes_per_token"))
      s.sampler_bytes_per_token =
          r.number(m, "sampler_bytes_per_token", Bound::kNonNegative, "a size");
    s.non_torch_gib = r.number(m, "non_torch_gib", Bound::kNonNegative, "a size in GiB");
    s.cuda_graph_gib = r.number(m, "cuda_graph_gib", Bound::kNonNegative, "a size in GiB");
  }
}

}  // namespace isim::sim::profile_io
