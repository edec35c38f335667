// isim validate --against vllm: the run's parallel layout against the profile, and how the replay
// lays out its engine cores (one engine, or one group of data_parallel_size cores behind dp-lb).
#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/validate/validate_vllm.h"
#include "experiments/validate/validate_vllm_layout.h"

namespace isim::exp {

std::string VllmLayout::line() const {
  if (!cluster()) return "";
  const std::string head = fmt::format("DP {} x TP {}", dp, tp);
  const std::string cores =
      dp == 1 ? "1 engine core" : fmt::format("{} engine cores in lockstep", dp);
  if (!moe)
    return fmt::format("{}, dense model: {} independent engine cores behind dp-lb", head, dp);
  if (ep)
    return fmt::format(
        "{}, expert parallel: {} behind dp-lb, the experts over {} EP "
        "ranks",
        head, cores, dp * tp);
  return fmt::format(
      "{}, no expert parallel: {} behind dp-lb, each expert split "
      "over {} ranks",
      head, cores, dp * tp);
}

VllmLayout check_vllm_profile(VllmMeta& meta, const sim::Profile& p, const std::string& profile) {
  if (meta.block_size != p.block_tokens)
    throw InputError(fmt::format(
        "{}: {}: the run used {}-token blocks, but the profile {} has kv.block_tokens {}",
        meta.path, meta.key_of("block_size"), meta.block_size, profile, p.block_tokens));
  if (meta.tensor_parallel_size != p.model.tp)
    throw InputError(fmt::format(
        "{}: engine_kwargs.tensor_parallel_size: the run used tp {}, but the profile {} has "
        "model.tp {}",
        meta.path, meta.tensor_parallel_size, profile, p.model.tp));
  VllmLayout l;
  l.dp = meta.data_parallel_size;
  l.tp = meta.tensor_parallel_size;
  l.moe = p.model.moe.given();
  l.ep = meta.enable_expert_parallel && l.moe && l.dp * l.tp > 1;
  if (meta.enable_expert_parallel && !l.moe)
    meta.assumptions.push_back(fmt::format(
        "engine_kwargs.enable_expert_parallel true has no effect: the profile's model {} is "
        "dense (vLLM applies it to MoE layers only)",
        p.model.name));
  else if (meta.enable_expert_parallel && !l.ep)
    meta.assumptions.push_back(
        "engine_kwargs.enable_expert_parallel true has no effect: data_parallel_size 1 x "
        "tensor_parallel_size 1 is one rank, which holds every expert");
  if (!l.lockstep()) return l;
  const std::string key =
      l.dp > 1 ? meta.key_of("data_parallel_size") : meta.key_of("enable_expert_parallel");
  const std::string value = l.dp > 1 ? std::to_string(l.dp) : "true";
  if (p.form != sim::ForwardForm::kTables ||
      (p.tables.moe_us.empty() && !p.tables.moe_roofline.given()))
    throw InputError(fmt::format(
        "{}: {}: {}: the engine cores of MoE model {} step together through every MoE layer, "
        "whose cost needs a tables profile with forward.tables.moe_us or moe_roofline; the "
        "profile {} has neither",
        meta.path, key, value, p.model.name, profile));
  const int64_t ranks = l.dp * l.tp;
  if (l.ep && p.model.moe.experts % ranks != 0)
    throw InputError(
        fmt::format("{}: {}: true: {}'s {} experts do not divide over data_parallel_size {} x "
                    "tensor_parallel_size {} = {} EP ranks",
                    meta.path, meta.key_of("enable_expert_parallel"), p.model.name,
                    p.model.moe.experts, l.dp, l.tp, ranks));
  return l;
}

void add_vllm_cluster(YAML::Node& y, const VllmLayout& l) {
  if (!l.cluster()) return;
  YAML::Node g;
  g["name"] = "vllm-dp";
  g["count"] = 1;
  g["dp"] = l.dp;
  if (l.ep) g["ep"] = true;
  y["cluster"]["replicas"].push_back(g);
  y["cluster"]["router"] = "dp-lb";
}

void note_vllm_layout(VllmMeta& meta, const VllmLayout& l, const Experiment& e) {
  if (!l.lockstep()) return;
  const ReplicaGroup& g = e.cluster.groups.front();
  const cluster::LinksConfig& links = e.cluster.disagg.links;
  if (l.dp * l.tp > 1)
    meta.assumptions.push_back(fmt::format(
        "each MoE layer's {} runs over the cluster's links: {} cores x tp {} GPUs per NVLink "
        "domain at {} GB/s and {} us a transfer, {} GB/s and {} us between nodes; dispatch and "
        "combine hidden behind compute: {} (ep_overlap), hottest rank's load over the mean: {} "
        "(expert_skew) (meta.json states neither; -p cluster.links.intra_node.gbps=N, "
        "-p cluster.replicas.0.ep_overlap=X change them)",
        l.ep ? "dispatch and combine" : "all-gather and reduce-scatter", links.replicas_per_node,
        l.tp, links.intra_node.gbps, links.intra_node.latency_s * 1e6, links.inter_node.gbps,
        links.inter_node.latency_s * 1e6, g.par.ep_overlap, g.par.expert_skew));
  if (l.dp * l.tp > l.tp)
    meta.assumptions.push_back(fmt::format(
        "the predicted KV capacity of each core holds 1/{} of the routed experts' weights per "
        "GPU under the reserve rule; the vllm rule's weight term counts them over tp {} only "
        "(the replay at vLLM's count does not depend on it)",
        l.dp * l.tp, l.tp));
}

// The cores of a replay on a cluster (VllmLayout), and how the lockstep group stepped.
nlohmann::ordered_json vllm_layout_json(const VllmLayout& l, const cluster::RunResult& first) {
  nlohmann::ordered_json j;
  j["line"] = l.line();
  j["data_parallel_size"] = l.dp;
  j["tensor_parallel_size"] = l.tp;
  j["expert_parallel"] = l.ep;
  j["lockstep"] = l.lockstep();
  j["router"] = first.fleet.router;
  j["engine_cores"] = first.replicas.size();
  if (!first.replicas.empty()) j["sim_gpu_blocks_per_core"] = first.replicas.front().blocks.gpu;
  if (l.lockstep()) {
    const cluster::LockstepStats& s = first.lockstep;
    j["steps"] = s.steps;
    j["core_steps"] = s.core_steps;
    j["dummy_core_steps"] = s.dummy_core_steps;
    j["core_wait_s"] = s.wait_s;
    j["moe_s"] = s.moe_s;
    j["exposed_comm_s"] = s.exposed_comm_s;
  }
  return j;
}

}  // namespace isim::exp
