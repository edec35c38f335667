// Reading a vLLM run's meta.json for isim validate --against vllm: each section (kv_cache,
// hardware, resolved_config) optional and read strictly when there (validate_vllm.h).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "core/input_file.h"
#include "core/json_shown.h"
#include "core/json_unique.h"
#include "experiments/validate/validate_vllm.h"

namespace isim::exp {

using json = nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  return read_input_file(path, "a vLLM run's meta.json");
}

// A strict reader of dotted key paths in meta.json.
class MetaReader {
 public:
  MetaReader(const json& root, std::string origin) : root_(root), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    throw InputError(origin_ + ": " + key + ": " + reason);
  }
  const json& at(const std::string& key) const {
    const json* node = &root_;
    std::string done;
    for (size_t start = 0; start <= key.size();) {
      const size_t dot = std::min(key.find('.', start), key.size());
      const std::string part = key.substr(start, dot - start);
      if (!node->is_object())
        fail(done, "expected an object (holding " + part + "), got " + shown(*node));
      auto it = node->find(part);
      if (it == node->end()) fail(key, "missing");
      node = &*it;
      done = key.substr(0, dot);
      start = dot + 1;
    }
    return *node;
  }
  // Whether `key` is there and not null (every object on its path must be there).
  bool has(const std::string& key) const {
    const json* node = &root_;
    for (size_t start = 0; start <= key.size();) {
      const size_t dot = std::min(key.find('.', start), key.size());
      if (!node->is_object()) return false;
      auto it = node->find(key.substr(start, dot - start));
      if (it == node->end()) return false;
      node = &*it;
      start = dot + 1;
    }
    return !node->is_null();
  }
  int64_t integer(const std::string& key, int64_t min) const {
    const json& v = at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < min)
      fail(key, fmt::format("expected an integer >= {}, got {}", min, shown(v)));
    return v.get<int64_t>();
  }
  std::optional<int64_t> integer_or_null(const std::string& key, int64_t min) const {
    if (at(key).is_null()) return std::nullopt;
    return integer(key, min);
  }
  double fraction(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1)
      fail(key, "expected a fraction in (0, 1], got " + shown(v));
    return v.get<double>();
  }
  bool boolean(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, "expected true or false, got " + shown(v));
    return v.get<bool>();
  }
  std::string text(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string() || v.get<std::string>().empty())
      fail(key, "expected a non-empty string, got " + shown(v));
    return v.get<std::string>();
  }

 private:
  const json& root_;
  std::string origin_;
};

// What the simulator cannot replay (yet), refused with what it would need.
void refuse_parallel(const MetaReader& m, const VllmMeta& meta) {
  // A cluster group holds at most 1024 cores (experiments/spec/cluster_spec.h).
  if (meta.data_parallel_size > 1024)
    m.fail(meta.key_of("data_parallel_size"),
           fmt::format("{}: at most 1024 engine cores are simulated", meta.data_parallel_size));
  if (meta.pipeline_parallel_size > 1)
    m.fail(meta.key_of("pipeline_parallel_size"),
           fmt::format("{}: pipeline parallelism is not simulated yet; it needs per-stage layer "
                       "costs, the activation transfer between stages and vLLM's queue of "
                       "micro-batches in flight",
                       meta.pipeline_parallel_size));
  if (!meta.enable_chunked_prefill)
    m.fail(meta.key_of("enable_chunked_prefill"),
           "false: not simulated; the vllm-v1 scheduler always chunks prefills, and replaying "
           "without chunking needs vLLM's whole-prompt admission");
  if (meta.performance_mode != "balanced")
    m.fail(meta.key_of("performance_mode"),
           "\"" + meta.performance_mode +
               "\": only \"balanced\" (vLLM's default) is simulated; its effect on vLLM's "
               "batch defaults and CUDA-graph sizes is not written here");
}

struct Sections {
  bool kv_cache = false, hardware = false, resolved_config = false;
};

// Settings each section may leave to another: engine_kwargs first, then (when resolved_config
// is there) its resolved value; what neither states goes to meta.unstated for
// apply_vllm_defaults (null reads as not stated, as the runner writes None).
void read_stated(const MetaReader& m, VllmMeta& meta, const Sections& s) {
  const std::string k = "engine_kwargs.";
  // The key that states `key`: engine_kwargs', else `resolved` (when resolved_config is
  // there), else "" and `key` is listed as unstated.
  auto source = [&](const std::string& key, const std::string& resolved) {
    std::string from;
    if (m.has(k + key))
      from = k + key;
    else if (s.resolved_config && !resolved.empty() && m.has(resolved))
      from = resolved;
    if (from.empty())
      meta.unstated.push_back(key);
    else
      meta.read_from[key] = from;
    return from;
  };
  const std::string par = "resolved_config.parallel_config.";
  if (auto key = source("tensor_parallel_size", par + "tensor_parallel_size"); !key.empty())
    meta.tensor_parallel_size = m.integer(key, 1);
  if (auto key = source("data_parallel_size", par + "data_parallel_size"); !key.empty())
    meta.data_parallel_size = m.integer(key, 1);
  if (auto key = source("pipeline_parallel_size", par + "pipeline_parallel_size"); !key.empty())
    meta.pipeline_parallel_size = m.integer(key, 1);
  if (auto key = source("enable_expert_parallel", par + "enable_expert_parallel"); !key.empty())
    meta.enable_expert_parallel = m.boolean(key);
  if (m.has(k + "max_model_len")) meta.max_model_len = m.integer(k + "max_model_len", 1);
  if (m.has(k + "performance_mode")) {
    meta.performance_mode = m.text(k + "performance_mode");
  } else if (s.resolved_config && m.has("resolved_config.performance_mode")) {
    meta.performance_mode = m.text("resolved_config.performance_mode");
    meta.read_from["performance_mode"] = "resolved_config.performance_mode";
  }
  const std::string sch = "resolved_config.scheduler_config.";
  if (auto key = source("max_num_seqs", sch + "max_num_seqs"); !key.empty())
    meta.max_num_seqs = m.integer(key, 1);
  if (auto key = source("max_num_batched_tokens", sch + "max_num_batched_tokens"); !key.empty())
    meta.max_num_batched_tokens = m.integer(key, 1);
  if (!s.kv_cache) {
    // vLLM's count, when the run fixed it (kv_cache states the count vLLM sized).
    if (m.has(k + "num_gpu_blocks_override")) {
      // Each engine core's count; vLLM's front end reports their sum.
      const int64_t per_core = m.integer(k + "num_gpu_blocks_override", 1);
      if (per_core > std::numeric_limits<int64_t>::max() / meta.data_parallel_size)
        m.fail(k + "num_gpu_blocks_override",
               fmt::format("{} blocks on each of {} engine cores is more than a count holds",
                           per_core, meta.data_parallel_size));
      meta.num_gpu_blocks = per_core * meta.data_parallel_size;
      if (meta.data_parallel_size > 1)
        meta.assumptions.push_back(fmt::format(
            "engine_kwargs.num_gpu_blocks_override {} is each engine core's count: vLLM's count "
            "is {} over the {} cores",
            per_core, *meta.num_gpu_blocks, meta.data_parallel_size));
    } else
      meta.no_gpu_blocks =
          "meta.json has no kv_cache and engine_kwargs.num_gpu_blocks_override is not set";
    if (m.has(k + "kv_cache_memory_bytes"))
      meta.assumptions.push_back(fmt::format(
          "engine_kwargs.kv_cache_memory_bytes {}: vLLM sized its KV cache from this byte "
          "count, not from gpu_memory_utilization; the predicted block count does not know it "
          "(-p engine.gpu_blocks=N replays at the count it gave)",
          m.integer(k + "kv_cache_memory_bytes", 1)));
    if (!source("gpu_memory_utilization", "").empty())
      meta.gpu_memory_utilization = m.fraction(k + "gpu_memory_utilization");
    if (!source("enable_prefix_caching", "").empty())
      meta.enable_prefix_caching = m.boolean(k + "enable_prefix_caching");
    if (!source("block_size", "").empty()) meta.block_size = m.integer(k + "block_size", 1);
  }
  if (s.resolved_config) return;
  if (!source("enable_chunked_prefill", "").empty())
    meta.enable_chunked_prefill = m.boolean(k + "enable_chunked_prefill");
  if (!source("async_scheduling", "").empty())
    meta.async_scheduling = m.boolean(k + "async_scheduling");
  if (!source("long_prefill_token_threshold", "").empty())
    meta.long_prefill_token_threshold = m.integer(k + "long_prefill_token_threshold", 0);
  if (!source("max_num_partial_prefills", "").empty())
    meta.max_num_partial_prefills = m.integer(k + "max_num_partial_prefills", 1);
  if (!source("max_long_partial_prefills", "").empty())
    meta.max_long_partial_prefills = m.integer(k + "max_long_partial_prefills", 1);
}

// kv_cache, when the run has it: every key but num_gpu_blocks must be there.
void read_kv_cache(const MetaReader& m, VllmMeta& meta) {
  const std::string c = "kv_cache.";
  meta.gpu_memory_utilization = m.fraction(c + "gpu_memory_utilization");
  meta.enable_prefix_caching = m.boolean(c + "enable_prefix_caching");
  meta.block_size = m.integer(c + "block_size", 1);
  for (const char* key : {"gpu_memory_utilization", "enable_prefix_caching", "block_size"})
    meta.read_from[key] = c + key;
  if (m.has(c + "num_gpu_blocks"))
    meta.num_gpu_blocks = m.integer(c + "num_gpu_blocks", 1);
  else
    meta.no_gpu_blocks = m.at("kv_cache").contains("num_gpu_blocks")
                             ? "kv_cache.num_gpu_blocks is null"
                             : "kv_cache has no num_gpu_blocks";
}

// resolved_config, when the run has it: vLLM's resolved scheduler knobs must be there.
void read_resolved(const MetaReader& m, VllmMeta& meta) {
  const std::string s = "resolved_config.scheduler_config.";
  meta.long_prefill_token_threshold = m.integer(s + "long_prefill_token_threshold", 0);
  meta.max_num_partial_prefills = m.integer(s + "max_num_partial_prefills", 1);
  meta.max_long_partial_prefills = m.integer(s + "max_long_partial_prefills", 1);
  meta.async_scheduling = m.boolean(s + "async_scheduling");
  for (const char* key : {"long_prefill_token_threshold", "max_num_partial_prefills",
                          "max_long_partial_prefills", "async_scheduling"})
    meta.read_from[key] = s + key;
  if (m.has(s + "enable_chunked_prefill")) {
    meta.enable_chunked_prefill = m.boolean(s + "enable_chunked_prefill");
    meta.read_from["enable_chunked_prefill"] = s + "enable_chunked_prefill";
  }
}

}  // namespace

VllmMeta parse_vllm_meta(const std::string& text, const std::string& origin) {
  json root;
  try {
    root = parse_json_unique<json>(text, origin);
  } catch (const json::exception& e) {
    throw InputError(origin + ": <json>: " + e.what());
  }
  if (!root.is_object())
    throw InputError(origin + ": <json>: expected a JSON object (a vLLM run's meta.json), got " +
                     shown(root));
  const MetaReader m(root, origin);
  if (m.integer("schema_version", 0) != 1)
    m.fail("schema_version", "expected 1, got " + shown(root["schema_version"]));
  VllmMeta meta;
  meta.path = origin;
  // Needed only for a default (apply_vllm_defaults says so when it is missing).
  if (m.has("vllm_version")) meta.vllm_version = m.text("vllm_version");
  meta.model = m.text("model");
  // Each section is optional; before April 2026 LLMServingSim's scripts wrote none of them.
  const Sections s{m.has("kv_cache"), m.has("hardware"), m.has("resolved_config")};
  if (!s.kv_cache) meta.missing_sections.push_back("kv_cache");
  if (!s.hardware) meta.missing_sections.push_back("hardware");
  if (!s.resolved_config) meta.missing_sections.push_back("resolved_config");
  meta.older_schema = meta.missing_sections.size() == 3;
  if (!m.at("engine_kwargs").is_object())
    m.fail("engine_kwargs", "expected an object, got " + shown(root["engine_kwargs"]));
  read_stated(m, meta, s);
  if (s.hardware) meta.device_name = m.text("hardware.device_name");
  if (s.kv_cache) read_kv_cache(m, meta);
  if (s.resolved_config) read_resolved(m, meta);
  if (meta.max_long_partial_prefills > meta.max_num_partial_prefills)
    m.fail(meta.key_of("max_long_partial_prefills"),
           fmt::format("{} is more than max_num_partial_prefills {}; expected at most "
                       "max_num_partial_prefills",
                       meta.max_long_partial_prefills, meta.max_num_partial_prefills));
  refuse_parallel(m, meta);
  meta.dataset_path = m.text("dataset_path");
  meta.dataset_hash = m.text("dataset_hash");
  if (meta.dataset_hash.size() != 64 ||
      meta.dataset_hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    m.fail("dataset_hash",
           "expected a sha256 (64 lowercase hex digits), got \"" + meta.dataset_hash + "\"");
  return meta;
}

VllmMeta read_vllm_meta(const std::string& path) {
  return parse_vllm_meta(slurp(path), path);
}
}  // namespace isim::exp
