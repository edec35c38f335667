// vLLM's own engine defaults, for a run whose meta.json does not state every setting (the older
// schema of LLMServingSim's scripts): isim validate --against vllm replays such a run on the
// defaults of the vLLM version the run names, and says so.
//
// Contract:
// - apply_vllm_defaults fills every key of meta.unstated (engine_kwargs names) and appends one
//   line per key to meta.assumptions: the key, the value taken and where vLLM sets it. It
//   clears meta.unstated. With nothing unstated it changes nothing and checks no version.
// - The parallel sizes (tensor, data, pipeline: 1; expert parallel: off) are the same in every
//   vLLM version. Every other default is known for vLLM 0.19 only ("0.19" or "0.19.N": the
//   defaults of 0.19.0's source, patch releases assumed to keep them); for any other
//   vllm_version an unstated setting is an InputError naming meta.json's `vllm_version`, the
//   first unstated key and the known versions; without vllm_version (meta.json does not
//   state it) the same InputError says `vllm_version: missing`.
// - max_num_batched_tokens and max_num_seqs depend on how the engine was started (vLLM's usage
//   context, `context`) and on the GPU's memory class (>= 70 GiB and not an A100), as in
//   vLLM's EngineArgs.get_batch_defaults; the GPU is the profile's (memory.usable_gib when
//   given, as vLLM reads the device's total memory, else device.memory_gib).
// - device_name, when the run does not name it, becomes the profile's device, said in an
//   assumption.
#pragma once

#include <string>
#include <vector>

#include "experiments/validate/validate_vllm.h"
#include "sim/profile.h"

namespace isim::exp {

// How the run's engine was started: vLLM's UsageContext, which picks the batch defaults.
enum class VllmUsageContext {
  kEngine,           // AsyncLLM / LLMEngine.from_engine_args (LLMServingSim's runner)
  kOpenAiApiServer,  // vllm serve
  kLlmClass,         // vllm.LLM
};
// "engine", "openai-api-server", "llm-class"; InputError naming `flag` otherwise.
VllmUsageContext parse_usage_context(const std::string& name, const std::string& flag);
std::string usage_context_name(VllmUsageContext c);

// Whether this project knows the defaults of `vllm_version` ("0.19", "0.19.N").
bool vllm_defaults_known(const std::string& vllm_version);

void apply_vllm_defaults(VllmMeta& meta, const sim::Profile& profile, VllmUsageContext context);

}  // namespace isim::exp
