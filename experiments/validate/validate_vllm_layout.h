// The cluster a vLLM run with data_parallel_size > 1 (or expert parallel on a MoE model) is
// replayed on, for isim validate --against vllm (validate_vllm.h: VllmLayout).
//
// Contract:
// - add_vllm_cluster writes nothing for the one-engine layout; otherwise `cluster:` with one
//   group `vllm-dp` (count 1, dp, ep when the layout's is on) and router dp-lb, before the
//   command's -p overrides apply.
// - note_vllm_layout adds to meta.assumptions, for a lockstep layout, the links and the
//   ep_overlap and expert_skew its MoE layers are simulated with (when there are two or more
//   ranks), and (when dp > 1) that the predicted KV capacity counts one engine's weights.
// - vllm_layout_json is against.json's `layout` (written only for a cluster layout): the line,
//   dp, tp, expert parallel, lockstep, router, engine cores, the simulated blocks per core and,
//   when in lockstep, the group's steps, dummy core-steps, wait, MoE and exposed time.
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "cluster/run_result.h"

#include "experiments/spec/experiment.h"
#include "experiments/validate/validate_vllm.h"

namespace isim::exp {

void add_vllm_cluster(YAML::Node& y, const VllmLayout& layout);
void note_vllm_layout(VllmMeta& meta, const VllmLayout& layout, const Experiment& e);
nlohmann::ordered_json vllm_layout_json(const VllmLayout& layout, const cluster::RunResult& first);

}  // namespace isim::exp
