#include "traces/sources.h"

#include <fmt/format.h>

#include "traces/generator.h"
#include "traces/infercept.h"
#include "traces/jsonl.h"
#include "traces/llmservingsim.h"
#include "traces/mooncake.h"
#include "traces/multiturn.h"
#include "traces/tracelab.h"
#include "traces/vllm_requests.h"

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

LoadedTrace generate_multiturn_trace(const SourceRequest& r) {
  auto cfg = r.path.empty() ? default_multiturn_config() : load_multiturn_config(r.path);
  if (r.think_time_s > 0) cfg.think_time_s.mean = r.think_time_s;
  return {generate_multiturn(cfg, r.sessions, r.seed), {}};
}

LoadedTrace generate_trace(const SourceRequest& r) {
  auto cfg = r.path.empty() ? default_generator_config() : load_generator_config(r.path);
  return {generate(cfg, r.sessions, r.seed), {}};
}

using Load = LoadedTrace (*)(const SourceRequest&);

TraceSourceRegistry::Factory reads(Load load) {
  return [load] { return std::make_unique<TraceSource>(TraceSource{false, load}); };
}
TraceSourceRegistry::Factory generates(Load load) {
  return [load] { return std::make_unique<TraceSource>(TraceSource{true, load}); };
}

}  // namespace

const TraceSourceRegistry& trace_source_registry() {
  static const TraceSourceRegistry r = [] {
    TraceSourceRegistry reg("trace source");
    reg.add("generator",
            "synthetic InferCept-style sessions from a generator YAML (or the defaults)",
            generates(generate_trace));
    reg.add("infercept", "InferCept's workload JSON (cumulative prompt_tokens, text or counts)",
            reads(load_infercept));
    reg.add("jsonl", "the native trace format, one session per line", reads(load_jsonl));
    reg.add("llmservingsim",
            "LLMServingSim request datasets (arrival_time_ns, lengths, token ids -> 16-token "
            "prefix hashes)",
            reads(load_llmservingsim));
    reg.add("mooncake", "Mooncake request traces (timestamp, lengths, 512-token prefix hash_ids)",
            reads(load_mooncake));
    reg.add("multiturn",
            "Pensieve-style multi-turn conversations (ShareGPT turns, 60 s think time)",
            generates(generate_multiturn_trace));
    reg.add("tracelab", "TraceLab coding-agent rounds (appended context, tool waits)",
            reads(load_tracelab));
    reg.add("vllm-requests",
            "a real vLLM run's requests.jsonl (arrivals from queued_ts, no prefix hashes)",
            reads(load_vllm_requests));
    return reg;
  }();
  return r;
}

}  // namespace isim::trace
