// isim validate: the simulator's fidelity against live execution, and the live integrity checks;
// with --against vllm, against a real vLLM run's recorded requests.
#include <algorithm>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "experiments/validate/against_aiperf.h"
#include "experiments/validate/against_guidellm.h"
#include "experiments/validate/against_vllm_bench.h"
#include "experiments/validate/validate_command.h"
#include "experiments/validate/validate_vllm.h"

namespace isim::exp {

namespace po = boost::program_options;

namespace {

const Help kAgainstHelp{
    "usage: isim validate --against vllm RUN_DIR --profile PROFILE.yaml [--out DIR]\n"
    "                     [-p key=value ...] [--scheduler NAME] [--usage-context C]\n"
    "       isim validate --against aiperf DIR --profile PROFILE.yaml [--out DIR] [-p ...]\n"
    "       isim validate --against guidellm FILE --profile P [--benchmark I] [--out DIR]\n"
    "       isim validate --against vllm-bench FILE --profile P [--seed S] [--out DIR]\n",
    "Replays RUN_DIR/requests.jsonl on the engine settings of RUN_DIR/meta.json (policy\n"
    "discard; a setting meta.json does not state takes vLLM's default of the run's version,\n"
    "printed as an assumption), at the predicted KV block count and, when the run states\n"
    "vLLM's count, again at that count (DIR/at-vllm-blocks). Prints real, sim and the\n"
    "relative error per metric, the capacity error and a summary line naming the latency and\n"
    "the capacity error; writes against.json, and against.csv, against_requests.csv and\n"
    "against.png beside each replay's usual outputs. A run with data_parallel_size D > 1\n"
    "replays on D engine cores behind the dp-lb router, in lockstep on a MoE model (with\n"
    "enable_expert_parallel, the experts over D x tp ranks); the layout line says so.\n"
    "aiperf DIR (profile_export.jsonl, profile_export_aiperf.json), guidellm FILE\n"
    "(benchmarks.json) and vllm-bench FILE (vllm bench serve --save-result --save-detailed)\n"
    "replay the tool's successful requests (its send times, lengths and conversations; vLLM\n"
    "bench records no send times: arrivals from its request_rate and burstiness) on the\n"
    "profile with the spec's engine defaults and -p, and compare each metric under that\n"
    "tool's own definitions (docs/validation.md); they write against.json and against.csv.\n"
    "Exit 0: compared; 2: bad input, or a layout not simulated yet (pipeline parallel).\n",
    "  isim validate --against vllm ../shared/data/llmservingsim/vllm-RTX4090-llama-3.1-8b \\\n"
    "      --profile calibrate/profiles/rtx4090-llama-3.1-8b.llmservingsim.yaml\n"
    "  isim validate --against vllm RUN_DIR --profile P.yaml -p engine.gpu_blocks=2588\n"
    "  isim validate --against guidellm tests/data/guidellm-excerpt.json \\\n"
    "      --profile tests/data/profile-linear-small.yaml\n"};

const Help kValidateHelp{
    "usage: isim validate EXPERIMENT.yaml [--calibrate-first] [-p key=value ...] [--out DIR]\n"
    "       isim validate --against vllm RUN_DIR --profile P (see --against vllm --help)\n"
    "       isim validate --against aiperf DIR | guidellm FILE | vllm-bench FILE --profile P\n"
    "       isim validate --kv-logs DIR (vLLM startup logs; see --kv-logs DIR --help)\n",
    "Runs every policy of the spec with `sim` (on its profile) and with its live executor,\n"
    "prints sim, live and the relative error per metric, and writes validation.csv.\n"
    "Exit 0: integrity checks passed; 1: a check failed, token streams differ, or the\n"
    "comparison is noisy (calibration off its target, host loaded; --accept-noisy); 2: bad\n"
    "input.\n",
    "  isim validate experiments/specs/validate-cpu.yaml\n"
    "  isim validate experiments/specs/validate-cpu.yaml --calibrate-first -p trace.sessions=20\n"};

bool wants_against(const Args& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--against" || a.starts_with("--against=");
  });
}

int cmd_validate_against(const Args& args) {
  po::options_description opts, hidden;
  std::string against;
  AgainstOptions o;
  int64_t benchmark = -1;
  uint64_t seed = 1;
  opts.add_options()("help,h", "show this help")(
      "against", po::value(&against),
      "what the run is: vllm (RUN_DIR), aiperf (DIR), guidellm (FILE), vllm-bench (FILE)")(
      "profile", po::value(&o.profile), "profile YAML of the run's GPU and model")(
      "out,o", po::value(&o.out), "output folder (default results/against-KIND)")(
      "set,p", override_flag(o.overrides, false),
      "override a spec key after the run's settings: -p engine.gpu_blocks=2588")(
      "add", override_flag(o.overrides, true), kAddHelp)(
      "scheduler", po::value(&o.scheduler),
      (std::string("scheduler (default ") + kAgainstVllmScheduler + ")").c_str())(
      "usage-context", po::value(&o.usage_context),
      "how the run's vLLM was started, for the batch defaults of a meta.json that does not "
      "state them: engine (AsyncLLM, LLMServingSim's runner; default), openai-api-server "
      "(vllm serve), llm-class (vllm.LLM)")(
      "benchmark", po::value(&benchmark),
      "guidellm: which benchmark of the report (0-based; needed when it holds several)")(
      "seed", po::value(&seed), "vllm-bench: seed of the drawn arrivals (default 1)");
  hidden.add_options()("run-dir", po::value(&o.run_dir), "the vLLM run folder");
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kAgainstHelp, opts);
  if (against != "vllm" && against != "aiperf" && against != "guidellm" && against != "vllm-bench")
    throw usage_error(
        "--against: unknown '" + against + "'; valid: vllm, aiperf, guidellm, vllm-bench",
        kAgainstHelp);
  if (o.run_dir.empty())
    throw usage_error(against == "vllm"     ? "needs RUN_DIR"
                      : against == "aiperf" ? "needs DIR (AIPerf's artifacts)"
                                            : "needs FILE",
                      kAgainstHelp);
  if (o.profile.empty()) throw usage_error("needs --profile PROFILE.yaml", kAgainstHelp);
  for (const auto& [flag, kind] : {std::pair<const char*, const char*>{"benchmark", "guidellm"},
                                   {"seed", "vllm-bench"},
                                   {"usage-context", "vllm"}})
    if (vm.count(flag) && against != kind)
      throw usage_error(fmt::format("--{}: only with --against {}", flag, kind), kAgainstHelp);
  if (o.out.empty()) o.out = "results/against-" + against;
  check_out_dir(o.out, "--out");
  if (against == "vllm") return run_against_vllm(o);
  BenchOptions b{against, o.run_dir, o.profile, o.out, o.scheduler, o.overrides, benchmark, seed};
  const BenchRun run = against == "aiperf"     ? read_aiperf(o.run_dir)
                       : against == "guidellm" ? read_guidellm(o.run_dir, benchmark)
                                               : read_vllm_bench(o.run_dir);
  return run_against_bench(run, b);
}

// The flags of `isim validate EXPERIMENT.yaml` as a request; nullopt after --help (printed).
std::optional<ValidateRequest> parse_validate_flags(const Args& args) {
  po::options_description opts, hidden;
  ValidateRequest r;
  opts.add_options()("help,h", "show this help")("set,p", override_flag(r.overrides, false),
                                                 "override a spec key: -p trace.sessions=20")(
      "add", override_flag(r.overrides, true), kAddHelp)(
      "out,o", po::value(&r.out),
      "output folder (default results/<name>-validate, or ...-validate-<overrides> with -p)")(
      "calibrate-first", "calibrate the live backend (validate.model) and validate against it")(
      "accept-noisy",
      "exit 0 even when the calibration missed its target or the host was loaded (by default "
      "either makes the comparison untrustworthy: exit 1)")(
      "check-invariants", "check engine invariants after every iteration");
  hidden.add_options()("experiment", po::value<std::string>(), "experiment YAML");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) {
    print_help(kValidateHelp, opts);
    return std::nullopt;
  }
  if (!vm.count("experiment")) throw usage_error("needs EXPERIMENT.yaml", kValidateHelp);
  r.spec = vm["experiment"].as<std::string>();
  r.calibrate_first = vm.count("calibrate-first") > 0;
  r.accept_noisy = vm.count("accept-noisy") > 0;
  r.check_invariants = vm.count("check-invariants") > 0;
  return r;
}

}  // namespace

int cmd_validate_kv_logs(const Args& args);  // experiments/cli/cli_validate_kv.cpp

int cmd_validate(const Args& args) {
  if (wants_against(args)) return cmd_validate_against(args);
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) {
        return a == "--kv-logs" || a.starts_with("--kv-logs=");
      }))
    return cmd_validate_kv_logs(args);
  const std::optional<ValidateRequest> r = parse_validate_flags(args);
  return r ? run_validation(*r) : 0;
}

}  // namespace isim::exp
