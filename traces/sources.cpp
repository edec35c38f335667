#include "traces/sources.h"

#include <fmt/format.h>

#include <cmath>

#include "core/input_error.h"
#include "traces/agents.h"
#include "traces/azure.h"
#include "traces/burstgpt.h"
#include "traces/conversations.h"
#include "traces/dynamo_agentic.h"
#include "traces/generator.h"
#include "traces/infercept.h"
#include "traces/jsonl.h"
#include "traces/llmservingsim.h"
#include "traces/mooncake.h"
#include "traces/multiturn.h"
#include "traces/sniff.h"
#include "traces/tracelab.h"
#include "traces/vllm_requests.h"
#include "traces/weka.h"

namespace isim::trace {

namespace {

LoadedTrace load_jsonl(const SourceRequest& r) {
  return {read_jsonl(r.path), {}};
}

LoadedTrace load_infercept(const SourceRequest& r) {
  ImportReport rep;
  LoadedTrace t{import_infercept(r.path, &rep), {}};
  if (rep.dropped_trailing_intercepts > 0)
    t.notes.push_back(fmt::format(
        "{}: {} trailing intercepts (after a session's last segment) dropped: nothing resumes "
        "after them",
        r.path, rep.dropped_trailing_intercepts));
  return t;
}

LoadedTrace load_mooncake(const SourceRequest& r) {
  MooncakeReport rep;
  LoadedTrace t{import_mooncake(r.path, &rep), {}};
  if (rep.zero_outputs_raised > 0)
    t.notes.push_back(
        fmt::format("{}: {} requests with output_length 0 decode 1 token (first at line {})",
                    r.path, rep.zero_outputs_raised, rep.first_zero_output_line));
  return t;
}

LoadedTrace load_mooncake_conversations(const SourceRequest& r) {
  LoadedTrace t = load_mooncake(r);
  ConversationReport rep;
  t.trace = chain_conversations(t.trace, &rep);
  t.notes.push_back(fmt::format(
      "{}: {} requests -> {} conversations ({} turns continue one, {} of them with a shorter "
      "prompt than the context: a reset; {} branches; at most {} turns); think time = the gap "
      "between a turn's arrival and the next's",
      r.path, rep.requests, rep.conversations, rep.continued, rep.resets, rep.branches,
      rep.most_turns));
  return t;
}

LoadedTrace load_tracelab(const SourceRequest& r) {
  TraceLabReport rep;
  LoadedTrace t{import_tracelab(r.path, &rep), {}};
  if (rep.inputs_raised + rep.zero_outputs_raised > 0)
    t.notes.push_back(fmt::format("{}: {} round inputs and {} outputs below 1 raised to 1", r.path,
                                  rep.inputs_raised, rep.zero_outputs_raised));
  return t;
}

LoadedTrace load_llmservingsim(const SourceRequest& r) {
  return {import_llmservingsim(r.path), {}};
}

LoadedTrace load_vllm_requests(const SourceRequest& r) {
  return {import_vllm_requests(r.path), {}};
}

LoadedTrace load_azure(const SourceRequest& r) {
  AzureReport rep;
  LoadedTrace t{import_azure(r.path, &rep), {}};
  t.notes.push_back(fmt::format(
      "{}: {} requests, each a single-turn session of class azure; arrivals count from the "
      "first row's TIMESTAMP, {}, to {} s; no prefix hashes",
      r.path, rep.sessions, rep.first_timestamp, rep.span_s));
  if (rep.zero_outputs_raised > 0)
    t.notes.push_back(
        fmt::format("{}: {} requests with GeneratedTokens 0 decode 1 token (first at line {})",
                    r.path, rep.zero_outputs_raised, rep.first_zero_output_line));
  return t;
}

LoadedTrace load_burstgpt(const SourceRequest& r) {
  BurstGptReport rep;
  LoadedTrace t{import_burstgpt(r.path, &rep), {}};
  std::string classes;
  for (const auto& [c, n] : rep.classes)
    classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", n, c);
  t.notes.push_back(fmt::format(
      "{}: {} requests, each a single-turn session ({}; trace.kinds keeps some); arrivals "
      "count from the first row's Timestamp, {} s; no prefix hashes",
      r.path, rep.sessions, classes, rep.origin_s));
  if (rep.failed_dropped > 0)
    t.notes.push_back(
        fmt::format("{}: {} failed requests (Response tokens 0) dropped, the first at line {}",
                    r.path, rep.failed_dropped, rep.first_failed_line));
  return t;
}

LoadedTrace generate_multiturn_trace(const SourceRequest& r) {
  auto cfg = r.path.empty() ? default_multiturn_config() : load_multiturn_config(r.path);
  if (r.think_time_s > 0) cfg.think_time_s.mean = r.think_time_s;
  return {generate_multiturn(cfg, r.sessions, r.seed), {}};
}

LoadedTrace generate_trace(const SourceRequest& r) {
  auto cfg = r.path.empty() ? default_generator_config() : load_generator_config(r.path);
  return {generate(cfg, r.sessions, r.seed), {}};
}

LoadedTrace generate_agents_trace(const SourceRequest& r) {
  auto cfg = r.path.empty() ? default_agents_config() : load_agents_config(r.path);
  if (!std::isfinite(r.rate_scale) || r.rate_scale <= 0)
    throw InputError(
        fmt::format("agents: rate_scale: must be a finite factor > 0, got {}", r.rate_scale));
  cfg.rate_scale *= r.rate_scale;
  AgentsReport rep;
  LoadedTrace t{generate_agents(cfg, r.sessions, r.seed, &rep), {}};
  std::string kinds;
  for (const auto& [k, n] : rep.by_kind)
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, k);
  t.notes.push_back(fmt::format(
      "agents: {} sessions ({}) over {} phases, {} s, rates x {}; the source sets arrival_s "
      "itself (Poisson within each phase): run it with arrival: {{process: replay}}",
      rep.sessions, kinds, cfg.phases.size(), rep.schedule_s, cfg.rate_scale));
  if (rep.subagents + rep.summaries > 0)
    t.notes.push_back(fmt::format(
        "agents: {} of them are subagents (forked at a tool step; each arrives at its parent's "
        "arrival + the parent's earlier waits, a lower bound) and {} segments summarise the "
        "context (context resets)",
        rep.subagents, rep.summaries));
  if (rep.capped)
    t.notes.push_back(fmt::format(
        "agents: stopped at the cap of {} sessions (trace.sessions) at {:.1f} s, in phase {} of "
        "{}; the rest of the schedule is empty",
        r.sessions, rep.capped_at_s, rep.capped_phase + 1, cfg.phases.size()));
  return t;
}

LoadedTrace load_weka(const SourceRequest& r) {
  WekaReport rep;
  LoadedTrace t{import_weka(r.path, &rep), {}};
  auto note = [&](const std::string& s) { t.notes.push_back(r.path + ": " + s); };
  note(fmt::format(
      "{} files -> {} sessions: {} subagents (forked from their parent, arriving when spawned, "
      "sharing {} tokens with it; {} end their context), {} context resets ({} compactions, {} "
      "rewrites; the reset keeps the blocks shared with the previous call); every file starts "
      "at 0 unless an arrival process spreads them (poisson spaces the files and keeps each "
      "subagent's offset from its parent, replay keeps every offset)",
      rep.files, rep.sessions, rep.subagents, rep.fork_tokens, rep.ends, rep.resets,
      rep.resets_shrunk, rep.resets - rep.resets_shrunk));
  if (rep.ends_unmarked > 0)
    note(
        fmt::format("{} subagents end on a segment that already carries another context event, "
                    "so no end is marked",
                    rep.ends_unmarked));
  if (rep.divergent_tails > 0)
    note(
        fmt::format("{} calls continued a context whose last blocks changed: {} tokens a real "
                    "server re-prefills are kept",
                    rep.divergent_tails, rep.tail_tokens));
  if (rep.inputs_raised > 0)
    note(
        fmt::format("{} calls whose context grew by less than the last output (dropped "
                    "thinking) prefill 1 token; the simulated context runs ahead (by up to {} "
                    "tokens) until later growth absorbs it",
                    rep.inputs_raised, rep.max_ahead_tokens));
  if (rep.waits_from_gap + rep.waits_without_think > 0)
    note(
        fmt::format("{} waits after calls without api_time are the gap between call starts (an "
                    "upper bound) and {} without think_time are that gap minus api_time",
                    rep.waits_from_gap, rep.waits_without_think));
  if (rep.kinds_from_input > 0)
    note(
        fmt::format("{} intercepts after a call with no tool_use/end_turn stop take their kind "
                    "from the next call's input_types",
                    rep.kinds_from_input));
  if (rep.zero_outputs_raised > 0)
    note(fmt::format("{} calls with out 0 decode 1 token", rep.zero_outputs_raised));
  return t;
}

LoadedTrace load_dynamo_agentic(const SourceRequest& r) {
  DynamoAgenticReport rep;
  const int64_t block = r.block_tokens > 0 ? r.block_tokens : kDynamoBlockTokens;
  LoadedTrace t{import_dynamo_agentic(r.path, block, &rep), {}};
  auto note = [&](const std::string& s) { t.notes.push_back(r.path + ": " + s); };
  note(fmt::format(
      "{} requests -> {} sessions at {} tokens per hash id: {} forked (subagents and branches, "
      "arriving at their recorded start, not after their parent's simulated request), {} end "
      "with context end, {} pieces started without waiting for their session's last request",
      rep.rows, rep.sessions, block, rep.forks, rep.ends, rep.splits));
  if (rep.resets_flagged + rep.resets_diverged + rep.resets_shrunk > 0)
    note(
        fmt::format("context resets to the prefix shared with the previous request: {} "
                    "prefix_reset, {} hashes diverged, {} context shrank",
                    rep.resets_flagged, rep.resets_diverged, rep.resets_shrunk));
  if (rep.joins > 0)
    note(fmt::format(
        "{} joins (waits on other sessions' requests) become 'join' intercepts lasting the "
        "recorded wait; {} of them measured from the previous request's start (an upper bound), "
        "{} without timestamps wait delay + tool_wait_ms only",
        rep.joins, rep.join_waits_from_start, rep.join_waits_without_times));
  if (rep.start_waits_dropped > 0)
    note(
        fmt::format("{} session-starting requests: their extra wait_for entries and delay / "
                    "tool_wait_ms are dropped (the recorded timestamp is the arrival)",
                    rep.start_waits_dropped));
  if (rep.zero_outputs_raised > 0)
    note(fmt::format("{} requests with output_length 0 decode 1 token", rep.zero_outputs_raised));
  if (rep.extra_hash_rows > 0)
    note(
        fmt::format("{} requests list more hash ids than their prompt has blocks: the extra "
                    "ones are dropped",
                    rep.extra_hash_rows));
  if (rep.dropped_field_rows > 0)
    note(
        fmt::format("{} requests carry fields the simulator drops (request_kind, priority, "
                    "strict_priority, policy_class, output_token_ids, tool_events)",
                    rep.dropped_field_rows));
  return t;
}

using Load = std::function<LoadedTrace(const SourceRequest&)>;

// A reader of files in format `from` (as traces/sniff.h names formats): its error on a file of
// another format names that format.
TraceSourceRegistry::Factory reads(const std::string& from, Load load) {
  const Load hinted = [from, load](const SourceRequest& r) {
    return with_format_hint(from, r.path, [&] { return load(r); });
  };
  return [hinted, from] { return std::make_unique<TraceSource>(TraceSource{false, hinted, from}); };
}
TraceSourceRegistry::Factory generates(Load load) {
  return [load] { return std::make_unique<TraceSource>(TraceSource{true, load, ""}); };
}

}  // namespace

const TraceSourceRegistry& trace_source_registry() {
  static const TraceSourceRegistry r = [] {
    TraceSourceRegistry reg("trace source");
    reg.add("agents",
            "coding, math and computer-use agent sessions on a phase schedule (sets arrivals)",
            generates(generate_agents_trace));
    reg.add("azure",
            "Azure LLM inference CSV (TIMESTAMP,ContextTokens,GeneratedTokens; 2023 and 2024 "
            "files), one single-turn session a row",
            reads("azure", load_azure));
    reg.add("burstgpt",
            "BurstGPT CSV (Timestamp, Model, Request/Response/Total tokens, Log Type); failed "
            "rows dropped, classes <model>-<conv|api>",
            reads("burstgpt", load_burstgpt));
    reg.add("dynamo-agentic",
            "NVIDIA Dynamo agentic Mooncake JSONL (wait_for DAG, branches, tool waits; hash_ids "
            "of trace.block_tokens, default 512)",
            reads("dynamo-agentic", load_dynamo_agentic));
    reg.add("generator",
            "synthetic InferCept-style sessions from a generator YAML (or the defaults)",
            generates(generate_trace));
    reg.add("infercept", "InferCept's workload JSON (cumulative prompt_tokens, text or counts)",
            reads("infercept", load_infercept));
    reg.add("jsonl", "the native trace format, one session per line", reads("jsonl", load_jsonl));
    reg.add("llmservingsim",
            "LLMServingSim request datasets (arrival_time_ns, lengths, token ids -> 16-token "
            "prefix hashes)",
            reads("llmservingsim", load_llmservingsim));
    reg.add("mooncake", "Mooncake request traces (timestamp, lengths, 512-token prefix hash_ids)",
            reads("mooncake", load_mooncake));
    reg.add("mooncake-conversations",
            "a Mooncake trace's requests chained into conversations by their hash_ids prefixes "
            "(traces/conversations.h)",
            reads("mooncake", load_mooncake_conversations));
    reg.add("multiturn",
            "Pensieve-style multi-turn conversations (ShareGPT turns, 60 s think time)",
            generates(generate_multiturn_trace));
    reg.add("tracelab", "TraceLab coding-agent rounds (appended context, tool waits)",
            reads("tracelab", load_tracelab));
    reg.add("vllm-requests",
            "a real vLLM run's requests.jsonl (arrivals from queued_ts, no prefix hashes)",
            reads("vllm-requests", load_vllm_requests));
    reg.add("weka-claude-code",
            "Claude Code sessions (kv-cache-tester JSON, a file or a directory; subagents, "
            "64-token hash_ids)",
            reads("weka-claude-code", load_weka));
    return reg;
  }();
  return r;
}

}  // namespace isim::trace
