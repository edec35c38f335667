// The meta.json of a tiny fake vLLM run (TP 1, 8 sequences, 64 batched tokens, 100 GPU blocks of
// 4 tokens, prefix caching on, a dataset hash of zeros) that the validate --against tests edit.
#pragma once

#include <nlohmann/json.hpp>

namespace isim::test {

inline nlohmann::json tiny_vllm_meta() {
  return nlohmann::json::parse(R"({
    "schema_version": 1, "model": "tiny", "vllm_version": "0.19.0",
    "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 8,
                      "max_num_batched_tokens": 64},
    "dataset_path": "workloads/d.jsonl",
    "dataset_hash": "0000000000000000000000000000000000000000000000000000000000000000",
    "kv_cache": {"num_gpu_blocks": 100, "block_size": 4, "gpu_memory_utilization": 0.9,
                 "enable_prefix_caching": true},
    "hardware": {"device_name": "test-gpu"},
    "resolved_config": {"scheduler_config": {"long_prefill_token_threshold": 0,
        "max_num_partial_prefills": 1, "max_long_partial_prefills": 1,
        "async_scheduling": false}}})");
}

}  // namespace isim::test
