// Reading vLLM startup logs (calibrate/vllm_startup_log.h): each field from the fixture's real
// line formats, and the errors that name FILE:LINE.
#include <doctest/doctest.h>

#include "calibrate/vllm_startup_log.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {
const std::string kArgs =
    "(APIServer pid=1) INFO 04-22 00:48:47 [entrypoints/utils.py:233] non-default args: ";
}  // namespace

TEST_CASE("vLLM startup log: every field of the toy fixture") {
  const std::string path = test::data_dir() + "/kv-logs/toy-1b--tp1pp1dp1--2048.log";
  const calib::VllmStartupLog g = calib::read_vllm_startup_log(path);
  CHECK(g.path == path);
  CHECK_FALSE(g.failed);
  CHECK(g.error.empty());
  CHECK(g.version == "0.19.0");
  CHECK(g.model == "acme/Toy-1B-Instruct");
  CHECK(g.args.at("model_tag") == "acme/Toy-1B-Instruct");
  CHECK(g.args.at("enable_prefix_caching") == "False");
  CHECK(g.tp == 1);
  CHECK(g.pp == 1);
  CHECK(g.dp == 1);
  CHECK(g.max_model_len == 4096);
  CHECK(g.gpu_memory_utilization == 0.5);
  CHECK(g.max_num_batched_tokens == 2048);  // the Defaulting lines
  CHECK(g.max_num_seqs == 256);
  CHECK(g.dtype == "bf16");  // dtype=torch.bfloat16 of the engine config line
  CHECK(g.kv_cache_dtype == "auto");
  CHECK(g.quantization.empty());  // quantization=None
  CHECK(g.requested_gib == 10.0);
  CHECK(g.model_loading_gib == 0.24);
  CHECK(g.cuda_graph_gib == 0.10);
  CHECK(g.available_kv_gib == 9.39);
  CHECK(g.kv_tokens == 2437280);  // "2,437,280 tokens"
  REQUIRE(g.profiles.size() == 1);
  CHECK(g.profiles[0].line == 8);
  CHECK(g.profiles[0].stage == 0);
  CHECK(g.profiles[0].non_kv_gib == 0.61);
  CHECK(g.profiles[0].torch_peak_gib == 0.12);
  CHECK(g.profiles[0].non_torch_gib == 0.25);
  CHECK(g.profiles[0].weights_gib == 0.24);
}

TEST_CASE("vLLM startup log: given args win over defaults; stages, kv fp8, quantization") {
  const std::string text =
      kArgs +
      "{'model': 'm/x', 'dtype': 'float16', 'max_num_batched_tokens': 4096, 'max_num_seqs': 64, "
      "'pipeline_parallel_size': 2, 'tensor_parallel_size': 2, 'kv_cache_dtype': 'fp8', "
      "'quantization': 'fp8', 'compilation_config': {'a': [1, 2]}}\n"
      "(APIServer pid=1) DEBUG 04-22 00:48:48 [engine/arg_utils.py:2232] Defaulting "
      "max_num_batched_tokens to 8192 for OPENAI_API_SERVER usage context.\n"
      "(Worker_PP1 pid=443) DEBUG 04-22 01:43:15 [v1/worker/gpu_worker.py:435] Memory profiling "
      "takes 14.85 seconds. Total non KV cache memory: 9.6GiB; torch peak memory increase: "
      "2.01GiB; non-torch forward increase memory: 0.07GiB; weights memory: 7.51GiB.\n";
  const calib::VllmStartupLog g = calib::parse_vllm_startup_log(text, "x.log");
  CHECK(g.max_num_batched_tokens == 4096);
  CHECK(g.max_num_seqs == 64);
  CHECK(g.tp == 2);
  CHECK(g.pp == 2);
  CHECK(g.dtype == "fp16");
  CHECK(g.kv_cache_dtype == "fp8");
  CHECK(g.quantization == "fp8");
  CHECK(g.args.at("compilation_config") == "{'a': [1, 2]}");
  CHECK(g.gpu_memory_utilization == 0.9);  // vLLM's default when not given
  CHECK(g.kv_tokens == -1);                // absent
  REQUIRE(g.profiles.size() == 1);
  CHECK(g.profiles[0].stage == 1);
  CHECK(g.profiles[0].line == 3);
  CHECK(g.profiles[0].torch_peak_gib == 2.01);
}

TEST_CASE("vLLM startup log: a .FAILED.log and its error") {
  const calib::VllmStartupLog g = calib::read_vllm_startup_log(
      test::data_dir() + "/kv-logs/toy-1b--tp2pp1dp1--2048.FAILED.log");
  CHECK(g.failed);
  CHECK(g.error.starts_with("ValueError: Free memory on device cuda:1 (60.87/79.19 GiB)"));
  CHECK(g.tp == 2);
}

TEST_CASE("vLLM startup log: errors name the file and line") {
  CHECK(test::error_of_call([] {
          (void)calib::read_vllm_startup_log(test::data_dir() + "/kv-logs-bad/notes.log");
        }) == test::data_dir() +
                  "/kv-logs-bad/notes.log:1: not a vLLM log line (expected '(PROCESS pid=N) "
                  "LEVEL MM-DD HH:MM:SS [file.py:N] ...')");
  const std::string no_args =
      "(EngineCore pid=2) INFO 04-22 00:49:37 [v1/core/kv_cache_utils.py:1319] GPU KV cache "
      "size: 10 tokens\n";
  CHECK(test::error_of_call([&] { (void)calib::parse_vllm_startup_log(no_args, "a.log"); }) ==
        "a.log:1: not a vLLM startup log: no 'non-default args: {...}' line");
  const std::string bad_number =
      kArgs + "{'model': 'm/x'}\n" +
      "(EngineCore pid=2) DEBUG 04-22 00:48:59 [v1/worker/gpu_worker.py:285] worker requested "
      "memory: lots\n";
  CHECK(test::error_of_call([&] { (void)calib::parse_vllm_startup_log(bad_number, "b.log"); }) ==
        "b.log:2: worker requested memory: expected a number, got 'lots'");
  CHECK(test::error_of_call([&] {
          (void)calib::parse_vllm_startup_log(kArgs + "{'model' 'm/x'}\n", "c.log");
        }) == "c.log:1: non-default args: expected ':' at column 10");
  CHECK(test::error_of_call([&] {
          (void)calib::parse_vllm_startup_log(kArgs + "{'tensor_parallel_size': 1.5}\n", "d.log");
        }) ==
        "d.log:1: non-default args: tensor_parallel_size: expected a whole number in [1, "
        "65536], got 1.5");
  CHECK(test::error_of_call([&] {
          (void)calib::parse_vllm_startup_log(kArgs + "{'gpu_memory_utilization': 1.5}\n", "e.log");
        }) == "e.log:1: non-default args: gpu_memory_utilization: expected (0, 1], got 1.5");
}
