#include "experiments/spec/engine_spec.h"

#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "policies/kv_managers.h"
#include "sim/pool_limits.h"
#include "sim/scheduler.h"

namespace isim::exp {

namespace {

// Shortest round-trip text, as experiment.cpp writes numbers.
std::string num(double v) { return fmt::format("{}", v); }

const std::vector<std::string> kEngineKeys = {"scheduler",
                                              "max_num_seqs",
                                              "max_num_batched_tokens",
                                              "gpu_memory_utilization",
                                              "activation_reserve_gib",
                                              "swap_space_gib",
                                              "gpu_blocks",
                                              "cpu_blocks",
                                              "prefix_caching",
                                              "kv_capacity",
                                              "long_prefill_token_threshold",
                                              "max_num_partial_prefills",
                                              "max_long_partial_prefills",
                                              "watermark",
                                              "reserve_full_isl",
                                              "async_scheduling",
                                              "kv_manager"};

// The keys of an `engine:` map onto `c` (the experiment's, or a cluster group's overrides).
void apply_engine(const YamlMap& en, sim::EngineConfig& c) {
  if (en.has("scheduler")) {
    c.scheduler = en.require<std::string>("scheduler", "a scheduler name");
    sim::scheduler_registry().get(c.scheduler, en.where("scheduler"));
  }
  // A present value must be > 0 (`positive`) or >= 0.
  auto bounded = [&](const char* k, auto& out, const char* what, bool positive) {
    if (!en.has(k)) return;
    out = en.require<std::decay_t<decltype(out)>>(k, what);
    if (positive && !(out > 0)) en.fail(k, "must be > 0");
    if (!positive && out < 0) en.fail(k, "must be >= 0");
  };
  bounded("max_num_seqs", c.max_num_seqs, "an integer", true);
  bounded("max_num_batched_tokens", c.max_num_batched_tokens, "an integer", true);
  bounded("gpu_memory_utilization", c.gpu_memory_utilization, "a fraction in (0, 1]", true);
  if (c.gpu_memory_utilization > 1) en.fail("gpu_memory_utilization", "must be <= 1");
  bounded("activation_reserve_gib", c.activation_reserve_gib, "GiB", false);
  if (en.has("activation_reserve_gib")) c.activation_reserve_given = true;
  if (en.has("kv_capacity")) {
    c.kv_capacity = en.require<std::string>("kv_capacity", "auto, vllm or reserve");
    if (c.kv_capacity != "auto" && c.kv_capacity != "vllm" && c.kv_capacity != "reserve")
      en.fail("kv_capacity", "expected auto, vllm or reserve, got '" + c.kv_capacity + "'");
  }
  bounded("long_prefill_token_threshold", c.long_prefill_token_threshold, "an integer (0 = no cap)",
          false);
  bounded("max_num_partial_prefills", c.max_num_partial_prefills, "an integer", true);
  bounded("max_long_partial_prefills", c.max_long_partial_prefills, "an integer", true);
  if (c.max_long_partial_prefills > c.max_num_partial_prefills)
    en.fail("max_long_partial_prefills", "must be <= max_num_partial_prefills");
  bounded("watermark", c.watermark, "a fraction in [0, 1)", false);
  if (c.watermark >= 1) en.fail("watermark", "must be < 1");
  c.reserve_full_isl = en.get<bool>("reserve_full_isl", c.reserve_full_isl, "true or false");
  c.async_scheduling = en.get<bool>("async_scheduling", c.async_scheduling, "true or false");
  bounded("swap_space_gib", c.swap_space_gib, "GiB", false);
  bounded("gpu_blocks", c.gpu_blocks, "an integer (0 = derive from memory)", false);
  const auto at_most_pool = [&](const char* k, int64_t v) {
    if (v > sim::kMaxPoolBlocks)
      en.fail(k, fmt::format("{} blocks is more than a pool holds (at most {})", v,
                             sim::kMaxPoolBlocks));
  };
  at_most_pool("gpu_blocks", c.gpu_blocks);
  c.prefix_caching = en.get<bool>("prefix_caching", c.prefix_caching, "true or false");
  if (en.has("kv_manager")) {
    Params params;
    read_named(en, "kv_manager", "kv manager", c.kv_manager, params);
    c.kv_manager_params = params.values;
    // Fail now, with the file's position: an unknown name or parameter.
    policy::kv_manager_registry().get(c.kv_manager, en.where("kv_manager"));
    policy::kv_manager_registry().create(c.kv_manager, en.where("kv_manager"), params);
  }
  c.cpu_blocks =
      en.get<int64_t>("cpu_blocks", c.cpu_blocks, "an integer (-1 = derive from swap_space_gib)");
  at_most_pool("cpu_blocks", c.cpu_blocks);
}

}  // namespace

void read_named(const YamlMap& cl, const std::string& key, const std::string& what,
                std::string& name, Params& params) {
  const YAML::Node n = cl.value(key);
  const std::string path = cl.key_path(key);
  params.where = path;
  if (!n.IsMap()) {
    name = read_as<std::string>(n, cl.file(), path, "a " + what + " name or {name: ..., params}");
    return;
  }
  const YAML::Node nm = n["name"];
  if (!nm)
    throw InputError(yaml_where(cl.file(), n, path + ".name") + ": missing " + what + " name");
  name = read_as<std::string>(nm, cl.file(), path + ".name", "a " + what + " name");
  for (const auto& kv : n) {
    const auto k = yaml_key(kv.first, cl.file(), path);
    if (k == "name") continue;
    params.values[k] =
        read_as<std::string>(kv.second, cl.file(), path + "." + k, "a scalar parameter");
  }
}

std::unique_ptr<sim::KvManager> make_kv_manager(const sim::EngineConfig& c) {
  return policy::kv_manager_registry().create(
      c.kv_manager, "engine.kv_manager", Params(c.kv_manager_params, "engine.kv_manager"));
}

void parse_engine(const YamlMap& parent, const std::string& key, sim::EngineConfig& c) {
  if (parent.has(key)) apply_engine(parent.map(key, kEngineKeys), c);
}

YAML::Node resolved_engine(const sim::EngineConfig& c) {
  YAML::Node e;
  e["scheduler"] = c.scheduler;
  e["max_num_seqs"] = c.max_num_seqs;
  e["max_num_batched_tokens"] = c.max_num_batched_tokens;
  e["gpu_memory_utilization"] = num(c.gpu_memory_utilization);
  e["kv_capacity"] = c.kv_capacity;
  e["activation_reserve_gib"] = num(c.activation_reserve_gib);
  e["swap_space_gib"] = num(c.swap_space_gib);
  e["gpu_blocks"] = c.gpu_blocks;
  e["cpu_blocks"] = c.cpu_blocks;
  e["prefix_caching"] = c.prefix_caching;
  if (c.scheduler == "vllm-v1") {
    e["long_prefill_token_threshold"] = c.long_prefill_token_threshold;
    e["max_num_partial_prefills"] = c.max_num_partial_prefills;
    e["max_long_partial_prefills"] = c.max_long_partial_prefills;
    e["watermark"] = num(c.watermark);
    e["reserve_full_isl"] = c.reserve_full_isl;
  }
  if (c.async_scheduling) e["async_scheduling"] = true;
  if (!c.kv_manager_params.empty()) {
    e["kv_manager"]["name"] = c.kv_manager;
    for (const auto& [k, v] : c.kv_manager_params) e["kv_manager"][k] = v;
  } else if (c.kv_manager != "local") {
    e["kv_manager"] = c.kv_manager;
  }
  return e;
}

}  // namespace isim::exp
