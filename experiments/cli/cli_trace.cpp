#include <iostream>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "traces/arrival.h"
#include "traces/generator.h"
#include "traces/infercept.h"
#include "traces/jsonl.h"
#include "traces/limits.h"
#include "traces/llmservingsim.h"
#include "traces/mooncake.h"
#include "traces/multiturn.h"
#include "traces/sniff.h"
#include "traces/sources.h"
#include "traces/stats.h"
#include "traces/trace_file.h"
#include "traces/tracelab.h"
#include "traces/vllm_requests.h"

namespace isim::exp {

namespace po = boost::program_options;

namespace {

const char* kFormats =
    "FORMAT: jsonl (default), azure, burstgpt, dynamo-agentic, infercept, llmservingsim,\n"
    "        mooncake, mooncake-conversations (its requests chained by hash_ids prefixes),\n"
    "        tracelab, vllm-requests, weka-claude-code (a file or a directory); a file of\n"
    "        another format than --from says is named with the --from it needs\n";

const Help kTraceHelp{
    "usage: isim trace convert --from FORMAT IN OUT [--block-tokens N]\n"
    "       isim trace gen GENERATOR.yaml|default OUT [--multiturn|--agents] [--sessions N]\n"
    "                      [--seed S] [--rate R]\n"
    "       isim trace stats TRACE [--from FORMAT] [--block-tokens N]\n",
    std::string(kFormats) + "Each sub-verb takes --help.\n",
    "  isim trace stats ../shared/data/infercept-mix/merged_exp_uniform.json --from infercept\n"
    "  isim trace gen default t.jsonl --sessions 200 --rate 2\n"
    "  isim trace convert --from mooncake ../shared/data/mooncake/conversation_trace.jsonl "
    "m.jsonl\n"};

const Help kConvertHelp{
    "usage: isim trace convert --from FORMAT IN OUT [--block-tokens N]\n",
    std::string("Imports a trace to the native JSONL (one session per line).\n") + kFormats,
    "  isim trace convert --from infercept ../shared/data/infercept-mix/merged_exp_uniform.json "
    "i.jsonl\n"
    "  isim trace convert --from weka-claude-code ../shared/data/weka-claude-code/traces "
    "w.jsonl\n"};

const Help kGenHelp{
    "usage: isim trace gen GENERATOR.yaml|default OUT [--multiturn|--agents] [--sessions N]\n"
    "                      [--seed S] [--rate R]\n",
    "Synthesizes a trace: InferCept-style sessions (default), Pensieve-style conversations\n"
    "(--multiturn) or agent sessions on a phase schedule (--agents: the schedule sets the\n"
    "arrivals, so --rate is refused, and --sessions caps them, 0: no cap). `default` uses\n"
    "the generator's built-in configuration (traces/generators/).\n",
    "  isim trace gen default t.jsonl --sessions 200 --rate 2\n"
    "  isim trace gen default mt.jsonl --multiturn --sessions 50 --seed 7\n"
    "  isim trace gen traces/generators/agents.yaml a.jsonl --agents --sessions 100\n"};

const Help kStatsHelp{
    "usage: isim trace stats TRACE [--from FORMAT] [--block-tokens N]\n",
    std::string("Prints per-kind counts, durations and context lengths of a trace.\n") + kFormats,
    "  isim trace stats t.jsonl\n"
    "  isim trace stats ../shared/data/infercept-mix/merged_exp_uniform.json --from infercept\n"};

trace::Trace read_as(const std::string& from, const std::string& path, int64_t block_tokens) {
  if (from == "jsonl") return trace::read_jsonl(path);
  if (from == "infercept") {
    trace::ImportReport rep;
    auto t = trace::import_infercept(path, &rep);
    fmt::print(stderr, "imported {} sessions, {} segments, {} intercepts from {}\n", rep.sessions,
               rep.segments, rep.intercepts, path);
    if (rep.dropped_trailing_intercepts > 0)
      fmt::print(stderr,
                 "note: {} trailing intercepts (after a session's last segment) dropped: nothing "
                 "resumes after them\n",
                 rep.dropped_trailing_intercepts);
    return t;
  }
  if (from == "mooncake") {
    trace::MooncakeReport rep;
    auto t = trace::import_mooncake(path, &rep);
    fmt::print(stderr, "imported {} requests from {}\n", rep.sessions, path);
    if (rep.zero_outputs_raised > 0)
      fmt::print(stderr, "note: {} requests with output_length 0 decode 1 token\n",
                 rep.zero_outputs_raised);
    return t;
  }
  if (from == "tracelab") {
    trace::TraceLabReport rep;
    auto t = trace::import_tracelab(path, &rep);
    fmt::print(stderr, "imported {} sessions, {} rounds, {} intercepts from {}\n", rep.sessions,
               rep.rounds, rep.intercepts, path);
    if (rep.inputs_raised + rep.zero_outputs_raised > 0)
      fmt::print(stderr, "note: {} round inputs and {} outputs below 1 raised to 1\n",
                 rep.inputs_raised, rep.zero_outputs_raised);
    return t;
  }
  if (from == "llmservingsim" || from == "vllm-requests") {
    auto t = from == "llmservingsim" ? trace::import_llmservingsim(path)
                                     : trace::import_vllm_requests(path);
    fmt::print(stderr, "imported {} requests from {}\n", t.size(), path);
    return t;
  }
  // Any other importer registered as a trace source (e.g. weka-claude-code), with its notes.
  const auto& sources = trace::trace_source_registry();
  if (sources.contains(from) && !sources.create(from, "--from")->generated) {
    trace::SourceRequest req;
    req.path = path;
    req.block_tokens = block_tokens;
    trace::LoadedTrace t = sources.create(from, "--from")->load(req);
    fmt::print(stderr, "imported {} sessions from {}\n", t.trace.size(), path);
    for (const auto& n : t.notes) fmt::print(stderr, "note: {}\n", n);
    return std::move(t.trace);
  }
  throw usage_error("unknown --from '" + from +
                        "'; valid: azure, burstgpt, dynamo-agentic, infercept, jsonl, "
                        "llmservingsim, mooncake, mooncake-conversations, tracelab, vllm-requests, "
                        "weka-claude-code",
                    kTraceHelp);
}

// The trace at `path` read as `from`; a file of another format is named with the --from it
// needs, and a trace of no sessions is an error whatever its format.
trace::Trace read_any(const std::string& from, const std::string& path, int64_t block_tokens) {
  if (block_tokens != 0 && from != "dynamo-agentic")
    throw usage_error("--block-tokens is for --from dynamo-agentic only", kTraceHelp);
  trace::Trace t =
      trace::with_format_hint(from, path, [&] { return read_as(from, path, block_tokens); });
  trace::require_sessions(t, path, "nothing to convert or count");
  return t;
}

}  // namespace

int cmd_trace(const Args& all) {
  if (all.empty()) throw usage_error("missing sub-command", kTraceHelp);
  const std::string sub = all[0];
  po::options_description opts, hidden;
  opts.add_options()("help,h", "show this help");
  if (sub == "--help" || sub == "-h") return print_help(kTraceHelp, opts);
  Args args(all.begin() + 1, all.end());
  std::string from = "jsonl";
  int64_t block_tokens = 0;
  po::positional_options_description pos;
  pos.add("in", 1).add("out", 1);
  hidden.add_options()("in", po::value<std::string>(), "input")("out", po::value<std::string>(),
                                                                "output");
  const auto input_options = [&] {
    opts.add_options()("from", po::value(&from), "input format (default jsonl; see FORMAT)")(
        "block-tokens", po::value(&block_tokens),
        "dynamo-agentic only: tokens per hash id (dynamo.replay's --trace-block-size; default "
        "512)");
  };
  if (sub == "convert") {
    input_options();
    auto vm = parse_visible_hidden(args, opts, hidden, pos);
    if (vm.count("help")) return print_help(kConvertHelp, opts);
    if (!vm.count("in") || !vm.count("out")) throw usage_error("needs IN and OUT", kConvertHelp);
    if (vm.count("block-tokens") && block_tokens < 1)
      throw usage_error("--block-tokens must be >= 1", kConvertHelp);
    check_out_file(vm["out"].as<std::string>(), "OUT");
    check_not_input(vm["out"].as<std::string>(), "OUT", {vm["in"].as<std::string>()});
    auto t = read_any(from, vm["in"].as<std::string>(), block_tokens);
    trace::write_jsonl_file(vm["out"].as<std::string>(), t);
    fmt::print(stderr, "wrote {} sessions to {}\n", t.size(), vm["out"].as<std::string>());
    return 0;
  }
  if (sub == "gen") {
    opts.add_options()("sessions", po::value<std::string>(), "sessions to generate (default 1000)")(
        "seed", po::value<std::string>(), "seed (default 1)")(
        "rate", po::value<std::string>(), "Poisson arrival rate (default: all arrive at 0)")(
        "multiturn", "a Pensieve-style multi-turn generator (default: the InferCept mix)")(
        "agents", "agent sessions on a phase schedule (traces/generators/agents.yaml)");
    auto vm = parse_visible_hidden(args, opts, hidden, pos);
    if (vm.count("help")) return print_help(kGenHelp, opts);
    if (!vm.count("in") || !vm.count("out"))
      throw usage_error("needs GENERATOR.yaml (or 'default') and OUT", kGenHelp);
    // Checked as a spec's values are: a finite rate > 0, whole non-negative integers.
    const uint64_t seed = flag_value<uint64_t>(vm, "seed", 1, "a non-negative integer",
                                               [](uint64_t) { return true; });
    const double rate = flag_value<double>(vm, "rate", 0, "a finite number > 0 (sessions/s)",
                                           [](double r) { return r > 0; });
    const int64_t sessions = flag_value<int64_t>(
        vm, "sessions", 1000, fmt::format("an integer in [0, {}]", trace::kMaxSessions),
        [](int64_t n) { return n >= 0 && n <= trace::kMaxSessions; });
    std::string g = vm["in"].as<std::string>();
    check_out_file(vm["out"].as<std::string>(), "OUT");
    if (g != "default") check_not_input(vm["out"].as<std::string>(), "OUT", {g});
    trace::Trace t;
    if (sessions <= 0) throw usage_error("--sessions must be > 0", kGenHelp);  // --agents too
    if (vm.count("agents")) {
      if (vm.count("multiturn") || vm.count("rate"))
        throw usage_error("--agents sets its own arrivals: no --rate, no --multiturn", kGenHelp);
      const int64_t cap = vm.count("sessions") ? sessions : 0;  // not the 1000 default
      auto loaded = trace::trace_source_registry()
                        .create("agents", "--agents")
                        ->load({g == "default" ? "" : g, cap, seed});
      for (const auto& n : loaded.notes) fmt::print(stderr, "note: {}\n", n);
      trace::write_jsonl_file(vm["out"].as<std::string>(), loaded.trace);
      fmt::print(stderr, "wrote {} sessions to {}\n", loaded.trace.size(),
                 vm["out"].as<std::string>());
      return 0;
    }
    if (vm.count("multiturn")) {
      auto cfg =
          g == "default" ? trace::default_multiturn_config() : trace::load_multiturn_config(g);
      t = trace::generate_multiturn(cfg, sessions, seed);
    } else {
      auto cfg =
          g == "default" ? trace::default_generator_config() : trace::load_generator_config(g);
      t = trace::generate(cfg, sessions, seed);
    }
    if (rate > 0) trace::apply_arrivals(t, trace::ArrivalSpec{"poisson", rate, seed});
    trace::write_jsonl_file(vm["out"].as<std::string>(), t);
    fmt::print(stderr, "wrote {} sessions to {}\n", t.size(), vm["out"].as<std::string>());
    return 0;
  }
  if (sub == "stats") {
    input_options();
    po::positional_options_description p1;
    p1.add("in", 1);
    auto vm = parse_visible_hidden(args, opts, hidden, p1);
    if (vm.count("help")) return print_help(kStatsHelp, opts);
    if (!vm.count("in")) throw usage_error("needs TRACE", kStatsHelp);
    if (vm.count("block-tokens") && block_tokens < 1)
      throw usage_error("--block-tokens must be >= 1", kStatsHelp);
    std::cout << trace::trace_stats(read_any(from, vm["in"].as<std::string>(), block_tokens));
    return 0;
  }
  throw usage_error("unknown sub-command '" + sub + "'", kTraceHelp);
}

}  // namespace isim::exp
