// Trace sources (`trace.from`): every way a trace enters a run, registered by name.
//
// Contract:
// - trace_source_registry() lists each source with a one-line description (`isim list` prints
//   them); get/create on an unknown name is an InputError listing the valid ones
//   ("WHERE: unknown trace source 'x'; valid: ...").
// - A source reads a file (`path`, required), or is `generated`: it synthesizes `sessions`
//   sessions seeded by `seed`, `path` being an optional config ("" = its built-in defaults).
//   `agents` is the exception: its phase schedule decides how many sessions arrive and when,
//   `sessions` > 0 only caps their number, and `rate_scale` scales the schedule's rates.
// - `block_tokens` > 0 sets the tokens per hash id of a trace whose file does not say it
//   (dynamo-agentic; 0 = the source's default). Only that source reads it: `trace.block_tokens`
//   and `isim trace --block-tokens` are refused for the others.
// - load() returns the sessions (arrival times as the source has them; generators give 0 but
//   `agents`, which sets them from its schedule) and
//   notes: what an importer changed or dropped, one line each, for the run's report. Bad input
//   is an InputError naming the file and the place in it.
// - A reader names the file format it reads (`format`): a file of another format is refused
//   naming the format it looks like (traces/sniff.h with_format_hint).
// Adding a source: one load function in sources.cpp and one registration line there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/registry.h"
#include "traces/session.h"

namespace isim::trace {

struct SourceRequest {
  std::string path;          // the trace file, or a generator's config ("" = its defaults)
  int64_t sessions = 0;      // generators: how many sessions (conversations)
  uint64_t seed = 1;         // generators
  double think_time_s = 0;   // multiturn: > 0 replaces the mean think time between turns
  double rate_scale = 1;     // agents: multiplies every phase's rate (and the config's rate_scale)
  int64_t block_tokens = 0;  // dynamo-agentic: tokens per hash id (0: its default, 512)
};

struct LoadedTrace {
  Trace trace;
  std::vector<std::string> notes;
};

struct TraceSource {
  bool generated = false;
  std::function<LoadedTrace(const SourceRequest&)> load;
  // A reader: the format of the files it reads, as traces/sniff.h names formats (its own name,
  // or, for mooncake-conversations, "mooncake"); "" for a generator.
  std::string format;
};

using TraceSourceRegistry = Registry<TraceSource>;
const TraceSourceRegistry& trace_source_registry();

}  // namespace isim::trace
