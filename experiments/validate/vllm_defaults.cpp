// vLLM 0.19's engine defaults for the settings a run's meta.json does not state.
#include "experiments/validate/vllm_defaults.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::exp {

namespace {

constexpr const char* kKnownVersions = "0.19, 0.19.N";

bool take(VllmMeta& m, const std::string& key) {
  auto it = std::find(m.unstated.begin(), m.unstated.end(), key);
  if (it == m.unstated.end()) return false;
  m.unstated.erase(it);
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The same in every vLLM version (ParallelConfig's fields).
void parallel_defaults(VllmMeta& m) {
  auto say = [&](const std::string& key, const std::string& value) {
    m.assumptions.push_back(fmt::format(
        "engine_kwargs.{} {} (not stated; vLLM's default in every version, ParallelConfig, "
        "vllm/config/parallel.py)",
        key, value));
  };
  if (take(m, "tensor_parallel_size")) say("tensor_parallel_size", "1");
  if (take(m, "data_parallel_size")) say("data_parallel_size", "1");
  if (take(m, "pipeline_parallel_size")) say("pipeline_parallel_size", "1");
  if (take(m, "enable_expert_parallel")) say("enable_expert_parallel", "false");
}

struct BatchDefaults {
  int64_t tokens = 0, seqs = 0;
  std::string why;
};

// vLLM 0.19, EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py): by usage context and by
// GPU class; a context its tables lack takes SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS
// and DEFAULT_MAX_NUM_SEQS (vllm/config/scheduler.py).
BatchDefaults batch_defaults_0_19(VllmUsageContext c, bool large_gpu, const std::string& gpu) {
  const std::string cls = large_gpu ? fmt::format("{}: >= 70 GiB and not an A100", gpu)
                                    : fmt::format("{}: under 70 GiB, or an A100", gpu);
  switch (c) {
    case VllmUsageContext::kEngine:
      return {2048, 128,
              "usage context engine is not in EngineArgs.get_batch_defaults' tables, so "
              "SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS / DEFAULT_MAX_NUM_SEQS "
              "(vllm/config/scheduler.py)"};
    case VllmUsageContext::kOpenAiApiServer:
      return {large_gpu ? 8192 : 2048, large_gpu ? 1024 : 256,
              fmt::format("EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py), usage "
                          "context openai-api-server, GPU class of {}",
                          cls)};
    case VllmUsageContext::kLlmClass:
      return {large_gpu ? 16384 : 8192, large_gpu ? 1024 : 256,
              fmt::format("EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py), usage "
                          "context llm-class, GPU class of {}",
                          cls)};
  }
  return {};
}

void batch_defaults(VllmMeta& m, const sim::Profile& p, VllmUsageContext c) {
  const bool tokens = take(m, "max_num_batched_tokens"), seqs = take(m, "max_num_seqs");
  if (!tokens && !seqs) return;
  // vLLM reads the device's total memory (torch), which memory.usable_gib records.
  const double gib = p.memory.given ? p.memory.usable_gib : p.device.memory_gib;
  const bool large = gib >= 70 && lower(p.device.name).find("a100") == std::string::npos;
  const std::string gpu = fmt::format("{}, {:.1f} GiB", m.device_name, gib);
  const BatchDefaults d = batch_defaults_0_19(c, large, gpu);
  m.assumptions.push_back(
      fmt::format("usage context: {} ({}; --usage-context engine|openai-api-server|llm-class)",
                  usage_context_name(c),
                  c == VllmUsageContext::kEngine
                      ? "AsyncLLM.from_engine_args, as LLMServingSim's runner starts vLLM"
                      : "given"));
  // _set_default_max_num_seqs_and_batched_tokens_args: defaults first, then a defaulted token
  // budget is capped at max_num_seqs x max_model_len, and a defaulted max_num_seqs at the
  // token budget.
  if (tokens) m.max_num_batched_tokens = d.tokens;
  if (seqs) m.max_num_seqs = d.seqs;
  std::string cap;
  if (tokens && m.max_model_len) {
    m.max_num_batched_tokens =
        std::min(m.max_num_seqs * *m.max_model_len, m.max_num_batched_tokens);
    cap = fmt::format(", capped at max_num_seqs x max_model_len {}", *m.max_model_len);
  } else if (tokens) {
    cap = ", max_model_len not stated: its cap max_num_seqs x max_model_len assumed not to bind";
  }
  if (seqs) m.max_num_seqs = std::min(m.max_num_seqs, m.max_num_batched_tokens);
  if (tokens)
    m.assumptions.push_back(
        fmt::format("engine_kwargs.max_num_batched_tokens {} (not stated; vLLM {}: {}{})",
                    m.max_num_batched_tokens, m.vllm_version, d.why, cap));
  if (seqs)
    m.assumptions.push_back(fmt::format(
        "engine_kwargs.max_num_seqs {} (not stated; vLLM {}: {}, at most the token budget)",
        m.max_num_seqs, m.vllm_version, d.why));
}

}  // namespace

VllmUsageContext parse_usage_context(const std::string& name, const std::string& flag) {
  if (name == "engine") return VllmUsageContext::kEngine;
  if (name == "openai-api-server") return VllmUsageContext::kOpenAiApiServer;
  if (name == "llm-class") return VllmUsageContext::kLlmClass;
  throw InputError(
      fmt::format("{}: unknown '{}'; valid: engine, openai-api-server, llm-class", flag, name));
}

std::string usage_context_name(VllmUsageContext c) {
  switch (c) {
    case VllmUsageContext::kEngine:
      return "engine";
    case VllmUsageContext::kOpenAiApiServer:
      return "openai-api-server";
    case VllmUsageContext::kLlmClass:
      return "llm-class";
  }
  return "?";
}

bool vllm_defaults_known(const std::string& v) {
  if (v == "0.19") return true;
  if (!v.starts_with("0.19.") || v.size() == 5) return false;
  return std::all_of(v.begin() + 5, v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void apply_vllm_defaults(VllmMeta& m, const sim::Profile& p, VllmUsageContext c) {
  if (m.device_name.empty()) {
    m.device_name = p.device.name.empty() ? "(unnamed)" : p.device.name;
    m.assumptions.push_back(
        fmt::format("GPU: {} (the profile's device; meta.json does not name one)", m.device_name));
  }
  parallel_defaults(m);
  if (m.unstated.empty()) return;
  if (m.vllm_version.empty())
    throw InputError(fmt::format(
        "{}: vllm_version: missing, and the run does not state engine_kwargs.{}, whose default "
        "depends on vLLM's version (known: {}); state vllm_version or the setting in "
        "meta.json's engine_kwargs",
        m.path, m.unstated.front(), kKnownVersions));
  if (!vllm_defaults_known(m.vllm_version))
    throw InputError(fmt::format(
        "{}: vllm_version: the run does not state engine_kwargs.{} and the defaults of vLLM "
        "'{}' are not known here (known: {}); state the setting in meta.json's engine_kwargs",
        m.path, m.unstated.front(), m.vllm_version, kKnownVersions));
  const std::string v = "vLLM " + m.vllm_version;
  auto say = [&](const std::string& key, const std::string& value, const std::string& where) {
    m.assumptions.push_back(
        fmt::format("engine_kwargs.{} {} (not stated; {}: {})", key, value, v, where));
  };
  if (take(m, "block_size")) {
    m.block_size = 16;
    say("block_size", "16",
        "CacheConfig.block_size unset becomes 16 on CUDA, vllm/platforms/cuda.py");
  }
  if (take(m, "gpu_memory_utilization")) {
    m.gpu_memory_utilization = 0.9;
    say("gpu_memory_utilization", "0.9",
        "CacheConfig.gpu_memory_utilization, vllm/config/cache.py");
  }
  const std::string chunk_prefix =
      "on for a generative decoder model, EngineArgs._set_default_chunked_prefill_and_prefix_"
      "caching_args, vllm/engine/arg_utils.py";
  if (take(m, "enable_prefix_caching")) {
    m.enable_prefix_caching = true;
    say("enable_prefix_caching", "true", chunk_prefix);
  }
  if (take(m, "enable_chunked_prefill")) {
    m.enable_chunked_prefill = true;
    say("enable_chunked_prefill", "true", chunk_prefix);
  }
  if (take(m, "async_scheduling")) {
    m.async_scheduling = m.pipeline_parallel_size == 1;
    say("async_scheduling", m.async_scheduling ? "true" : "false",
        "VllmConfig.__post_init__, vllm/config/vllm.py: on unless pipeline parallel, speculative "
        "decoding or an executor without it (the shared RTX 4090 run of vLLM 0.19.0 resolved it "
        "to true unasked)");
  }
  const std::string sched = "SchedulerConfig, vllm/config/scheduler.py";
  if (take(m, "long_prefill_token_threshold")) {
    m.long_prefill_token_threshold = 0;
    say("long_prefill_token_threshold", "0", sched);
  }
  if (take(m, "max_num_partial_prefills")) {
    m.max_num_partial_prefills = 1;
    say("max_num_partial_prefills", "1", sched);
  }
  if (take(m, "max_long_partial_prefills")) {
    m.max_long_partial_prefills = 1;
    say("max_long_partial_prefills", "1", sched);
  }
  batch_defaults(m, p, c);
  if (!m.unstated.empty())  // a key the parser marks but this table lacks: a bug, said plainly
    throw std::logic_error("apply_vllm_defaults: no default for " + m.unstated.front());
}

}  // namespace isim::exp
