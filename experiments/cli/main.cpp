// isim: the simulator's command line.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>
#include <boost/program_options/errors.hpp>

#include "core/input_error.h"
#include "core/interrupt.h"
#include "experiments/cli/cli.h"
#include "experiments/version.h"

namespace {
const char* kUsage =
    "usage: isim VERB [ARGS]\n"
    "  run EXPERIMENT.yaml [-p key=value ...] [--out DIR]   run an experiment (every policy in "
    "it)\n"
    "  run --trace T --profile P --policy NAME [...]        run from flags (isim run --help)\n"
    "  sweep EXPERIMENT.yaml [--jobs N] [--shard K/N] [--out DIR] [-p key=value ...]\n"
    "                                                        run a sweep, write results.csv (+ "
    "plots)\n"
    "  sweep merge OUT.csv JOURNAL|DIR ...                   join the journals of shards\n"
    "  sweep submit --slurm|--k8s EXPERIMENT.yaml --tasks N  a sweep's shards on a cluster\n"
    "  validate EXPERIMENT.yaml [--calibrate-first] [--out DIR]  sim against live execution:\n"
    "                                                        fidelity per metric, integrity "
    "checks\n"
    "  validate --against vllm RUN_DIR --profile P [--out DIR]  sim against a real vLLM run\n"
    "  plan SPEC.yaml [--jobs N] [--out DIR] [-p key=value ...]  cheapest GPUs meeting SLOs, per\n"
    "                                                        policy: plan.csv (+ plots)\n"
    "  plan merge SPEC.yaml JOURNAL|DIR ...                  join the journals of a plan's shards\n"
    "  plan submit --slurm|--k8s SPEC.yaml --tasks N         a plan's shards on a cluster\n"
    "  headroom SPEC.yaml [--seeds N] [--out DIR] [-p key=value ...]  highest load within\n"
    "                                                        the SLO per policy, + plot\n"
    "  list                                                  every registered component\n"
    "  trace convert --from FORMAT IN OUT                    import a trace to native JSONL\n"
    "  trace gen GENERATOR.yaml OUT [--multiturn] [--sessions N]  synthesize a trace\n"
    "  trace stats TRACE [--from FORMAT]                     per-kind counts, durations, contexts\n"
    "  profile show PROFILE [--plot OUT.png]                 summarize (and plot) a profile\n"
    "  profile import --from llmservingsim|aiconfigurator ...  public measurements -> profile\n"
    "  profile analytic --gpu SPEC.yaml --model M.yaml ...   a roofline profile\n"
    "  profile diff BASE NEW [--max-regression 5%]           exit 1 on a slowdown (CI check)\n"
    "  model import HF_CONFIG.json --out M.yaml             a Hugging Face config.json -> model "
    "YAML\n"
    "  --version                                             print the version\n"
    "Every verb and sub-verb takes --help (usage, options, examples): isim trace gen --help\n"
    "examples:\n"
    "  isim run experiments/specs/quickstart.yaml\n"
    "  isim list\n"
    "  isim profile show --help\n";
}

int main(int argc, char** argv) {
  using namespace isim;
  using namespace isim::exp;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string verb = argv[1];
  Args args(argv + 2, argv + argc);
  install_interrupt_handlers();
  try {
    if (verb == "run") return cmd_run(args);
    if (verb == "sweep") return cmd_sweep(args);
    if (verb == "validate") return cmd_validate(args);
    if (verb == "plan") return cmd_plan(args);
    if (verb == "headroom") return cmd_headroom(args);
    if (verb == "list") return cmd_list(args);
    if (verb == "trace") return cmd_trace(args);
    if (verb == "profile") return cmd_profile(args);
    if (verb == "model") return cmd_model(args);
    if (verb == "--version" || verb == "version") {
      fmt::print("isim {} ({})\n", ISIM_VERSION, ISIM_GIT_SHA);
      return 0;
    }
    if (verb == "--help" || verb == "-h" || verb == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    fmt::print(stderr, "isim: unknown verb '{}'\n{}", verb, kUsage);
    return 2;
  } catch (const isim::InputError& e) {
    fmt::print(stderr, "isim: error: {}\n", e.what());
    return 2;
  } catch (const UsageError& e) {
    fmt::print(stderr, "isim {}: {}\n{}", verb, e.message, e.usage);
    return 2;
  } catch (const boost::program_options::error& e) {
    fmt::print(stderr, "isim {}: {}\n(see isim {} --help)\n", verb, e.what(), verb);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "isim: internal error: {}\n", e.what());
    return 3;
  }
}
