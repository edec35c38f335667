// One vLLM server's startup log, read for what sizes its KV cache (`isim validate --kv-logs`).
//
// Contract:
// - read_vllm_startup_log(path) reads the lines of a vLLM (v1 engine) startup log: every line
//   is `(PROCESS pid=N) LEVEL MM-DD HH:MM:SS [file.py:N] message`, a bare `LEVEL MM-DD ...`
//   line or a progress bar; only the first line's form is checked. It takes:
//   - `non-default args: {...}` (required): the Python dict, each value kept as its text
//     (quotes removed), and from it model, tensor_parallel_size, pipeline_parallel_size,
//     data_parallel_size, max_model_len, gpu_memory_utilization (default 0.9),
//     max_num_batched_tokens, max_num_seqs, dtype, kv_cache_dtype, quantization;
//   - `Defaulting max_num_batched_tokens to N` / `Defaulting max_num_seqs to N` when not given;
//   - the engine config line (`Initializing a V1 LLM engine (vX) with config: ...`): the
//     version and the resolved dtype (torch.bfloat16 -> bf16), quantization, kv_cache_dtype;
//   - `worker requested memory: X GiB`, `Model loading took X GiB`, `Estimated CUDA graph
//     memory: X GiB total`, `Available KV cache memory: X GiB`, `GPU KV cache size: N tokens`
//     (the first of each; -1 when absent);
//   - each `Memory profiling takes ... Total non KV cache memory: X; torch peak memory
//     increase: X; non-torch forward increase memory: X; weights memory: X` line, with its
//     pipeline stage from the process tag (Worker_PP1 -> 1; otherwise 0);
//   - failed: the file name ends in `.FAILED.log` (the server did not start); `error` is the
//     first line with `Error:` in it, from that word on ("" when none).
// - Errors are InputError naming FILE:LINE: a first line that is not a vLLM log line, no
//   non-default args line (FILE:1), a dict or number that cannot be read (its line).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace isim::calib {

struct VllmMemoryProfile {
  int line = 0;
  int stage = 0;  // pipeline stage of the worker that logged it
  double non_kv_gib = 0, torch_peak_gib = 0, non_torch_gib = 0, weights_gib = 0;
};

struct VllmStartupLog {
  std::string path;
  bool failed = false;
  std::string error;
  std::string version;  // e.g. "0.19.0"; "" when the config line is absent
  std::map<std::string, std::string> args;
  std::string model;
  int tp = 1, pp = 1, dp = 1;
  int64_t max_model_len = 0;
  double gpu_memory_utilization = 0.9;
  int64_t max_num_batched_tokens = 0;  // 0: not logged
  int64_t max_num_seqs = 0;
  std::string dtype;                    // bf16, fp16, fp32 (resolved); "" when not logged
  std::string kv_cache_dtype = "auto";  // auto | fp8 | ...
  std::string quantization;             // "" : none
  double requested_gib = -1;
  double model_loading_gib = -1;
  double cuda_graph_gib = -1;
  double available_kv_gib = -1;
  int64_t kv_tokens = -1;
  std::vector<VllmMemoryProfile> profiles;
};

VllmStartupLog read_vllm_startup_log(const std::string& path);
VllmStartupLog parse_vllm_startup_log(const std::string& text, const std::string& path);

}  // namespace isim::calib
