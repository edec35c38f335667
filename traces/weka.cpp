#include "traces/weka.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/hash.h"
#include "core/input_error.h"
#include "core/input_file.h"
#include "traces/json_lines.h"
#include "traces/jsonl.h"
#include "traces/trace_file.h"

namespace isim::trace {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using json_lines::shown;

// "at.key", or "key" at the document's top.
std::string key_of(const std::string& at, const char* key) {
  return at.empty() ? std::string(key) : at + "." + key;
}

struct File {
  std::string path;
  uint64_t scope = 0;  // hash_ids are (scope, id) pairs
  int64_t block = 0;

  [[noreturn]] void fail(const std::string& at, const std::string& reason) const {
    throw InputError(path + ": " + at + ": " + reason);
  }
  const json& need(const json& obj, const char* key, const std::string& at) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(key_of(at, key), "missing");
    return *it;
  }
  // A token count in [min, kMaxTokens] (traces/limits.h).
  int64_t count(const json& obj, const char* key, const std::string& at, int64_t min) const {
    const json& v = need(obj, key, at);
    const std::string problem =
        json_lines::tokens_problem(v, min, fmt::format("an integer >= {}", min));
    if (!problem.empty()) fail(key_of(at, key), problem);
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  // Seconds (milliseconds when `ms`) in [0, kMaxSeconds], returned in seconds.
  std::optional<double> seconds(const json& obj, const char* key, const std::string& at,
                                bool required, bool ms = false) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) fail(key_of(at, key), "missing");
      return std::nullopt;
    }
    const std::string problem =
        json_lines::time_problem(*it, "a finite number >= 0", ms ? 1000 : 1, ms ? "ms" : "s");
    if (!problem.empty()) fail(key_of(at, key), problem);
    return it->get<double>() * (ms ? 1e-3 : 1);
  }
  std::string text(const json& obj, const char* key, const std::string& at) const {
    const json& v = need(obj, key, at);
    if (!v.is_string()) fail(key_of(at, key), "expected a string, got " + shown(v));
    return v.get<std::string>();
  }
  uint64_t hash(uint64_t id) const { return splitmix64(scope ^ splitmix64(id)); }
};

struct Call {
  std::string at;
  double t = 0;
  int64_t in = 0, out = 0;
  std::vector<uint64_t> ids;  // the trace's own ids
  std::string stop;
  bool tool_result_in = false;  // input_types holds "tool_result"
  std::optional<double> think, api;
};

std::vector<uint64_t> hash_ids(const File& f, const json& r, const std::string& at, int64_t in) {
  const json& ids = f.need(r, "hash_ids", at);
  if (!ids.is_array())
    f.fail(at + ".hash_ids", "expected an array of non-negative integers, got " + shown(ids));
  const int64_t blocks = (in + f.block - 1) / f.block;
  if (static_cast<int64_t>(ids.size()) > blocks)
    f.fail(at + fmt::format(".hash_ids[{}]", blocks),
           fmt::format("{} hash ids but in = {} has only ceil({} / {}) = {} blocks", ids.size(), in,
                       in, f.block, blocks));
  std::vector<uint64_t> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_unsigned())
      f.fail(at + fmt::format(".hash_ids[{}]", i),
             "expected a non-negative integer below 2^64, got " + shown(ids[i]));
    out.push_back(ids[i].get<uint64_t>());
  }
  return out;
}

bool has_tool_result(const File& f, const json& r, const std::string& at) {
  const json& types = f.need(r, "input_types", at);
  if (!types.is_array()) f.fail(at + ".input_types", "expected an array, got " + shown(types));
  bool found = false;
  for (size_t i = 0; i < types.size(); ++i) {
    if (!types[i].is_string())
      f.fail(at + fmt::format(".input_types[{}]", i), "expected a string, got " + shown(types[i]));
    found = found || types[i].get<std::string>() == "tool_result";
  }
  return found;
}

Call parse_call(const File& f, const json& r, const std::string& at) {
  Call c;
  c.at = at;
  c.t = *f.seconds(r, "t", at, true);
  c.in = f.count(r, "in", at, 1);
  c.out = f.count(r, "out", at, 0);
  c.ids = hash_ids(f, r, at, c.in);
  c.stop = f.text(r, "stop", at);
  c.tool_result_in = has_tool_result(f, r, at);
  c.think = f.seconds(r, "think_time", at, false);
  c.api = f.seconds(r, "api_time", at, false);
  return c;
}

size_t shared_prefix(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

Intercept intercept_between(const Call& prev, const Call& next, WekaReport& rep) {
  Intercept i;
  if (prev.stop == "tool_use" || prev.stop == "end_turn") {
    i.kind = prev.stop == "tool_use" ? "tool" : "user";
  } else {
    i.kind = next.tool_result_in ? "tool" : "user";
    ++rep.kinds_from_input;
  }
  if (!prev.api) {
    i.duration_s = next.t - prev.t;
    ++rep.waits_from_gap;
  } else if (!next.think) {
    i.duration_s = std::max(0.0, next.t - prev.t - *prev.api);
    ++rep.waits_without_think;
  } else {
    i.duration_s = *next.think;
  }
  return i;
}

int64_t output_of(const Call& c, WekaReport& rep) {
  if (c.out > 0) return c.out;
  ++rep.zero_outputs_raised;
  return 1;
}

PrefixHashes prefix_of(const File& f, const Call& c) {
  PrefixHashes p{f.block, {}};
  for (uint64_t id : c.ids) p.hashes.push_back(f.hash(id));
  if (p.hashes.empty()) p.block_tokens = 0;  // no hashes: the native format's "no prefix"
  return p;
}

// Leading tokens call `b` has in common with call `a`: the blocks whose ids agree from the
// start, block_size each, capped by both calls' `in` (a call's last block may be partial).
int64_t shared_tokens(const File& f, const Call& a, const Call& b) {
  const auto blocks = static_cast<int64_t>(shared_prefix(a.ids, b.ids));
  return std::min({blocks * f.block, a.in, b.in});
}

// Call c after a compaction or rewrite of prev's context: a reset to the leading tokens they
// share, the rest of c's `in` being its new input (at least 1 token).
Segment reset_segment(const File& f, const Call& prev, const Call& c, WekaReport& rep) {
  ++rep.resets;
  if (c.in < prev.in) ++rep.resets_shrunk;
  const int64_t kept = shared_tokens(f, prev, c);
  Segment seg;
  seg.input = std::max<int64_t>(1, c.in - kept);
  const int64_t tokens = c.in - seg.input;
  seg.event = ContextEvent{ContextEventKind::kReset, tokens, std::min(kept, tokens), ""};
  return seg;
}

// Call c continuing prev's context (`context` tokens so far): its input is the growth of `in`.
Segment continued_segment(const File& f, const Call& prev, const Call& c, size_t shared,
                          int64_t context, WekaReport& rep) {
  if (shared < prev.ids.size()) {
    ++rep.divergent_tails;
    rep.tail_tokens += static_cast<int64_t>(prev.ids.size() - shared) * f.block;
  }
  Segment seg;
  seg.input = c.in - context;
  if (seg.input < 1) {
    rep.max_ahead_tokens = std::max(rep.max_ahead_tokens, context + 1 - c.in);
    seg.input = 1;
    ++rep.inputs_raised;
  }
  return seg;
}

// One agent's calls as one session: a segment per call, a reset at every compaction or rewrite.
Session convert_calls(const File& f, const std::vector<Call>& calls, const std::string& id,
                      double start, WekaReport& rep) {
  Session s{id, start + calls[0].t, {}, prefix_of(f, calls[0])};
  int64_t context = 0;
  for (size_t k = 0; k < calls.size(); ++k) {
    const Call& c = calls[k];
    Segment seg{c.in, 0, std::nullopt};
    if (k > 0) {
      const Call& prev = calls[k - 1];
      s.segments.back().intercept = intercept_between(prev, c, rep);
      const size_t shared = shared_prefix(prev.ids, c.ids);
      seg = 2 * shared < prev.ids.size() ? reset_segment(f, prev, c, rep)
                                         : continued_segment(f, prev, c, shared, context, rep);
    }
    seg.output = output_of(c, rep);
    if (seg.event.kind == ContextEventKind::kReset) context = seg.event.tokens;
    context += seg.input + seg.output;
    s.segments.push_back(std::move(seg));
  }
  return s;
}

// What a subagent forks from: its parent's id and the parent's call that spawned it.
struct Fork {
  std::string parent;
  const Call* spawn = nullptr;
  int depth = 1;  // subagents between it and the file's own agent, itself included
};

// Subagents nest by recursion, so a file nesting them without end would overflow the stack.
constexpr int kMaxSubagentDepth = 64;

// Segment 0 forks from the spawning call's leading blocks; the last segment ends the context
// unless it already carries an event (a one-call subagent's fork, or a reset).
void mark_subagent(const File& f, const Fork& from, const Call& first, Session& s,
                   WekaReport& rep) {
  const int64_t tokens = shared_tokens(f, *from.spawn, first);
  s.segments[0].event = ContextEvent{ContextEventKind::kFork, tokens, 0, from.parent};
  ++rep.forks;
  rep.fork_tokens += tokens;
  ContextEvent& last = s.segments.back().event;
  if (last.kind != ContextEventKind::kNone) {
    ++rep.ends_unmarked;
    return;
  }
  last.kind = ContextEventKind::kEnd;
  ++rep.ends;
}

void convert_agent(const File& f, const json& requests, const std::string& at,
                   const std::string& id, double start, const Fork* from, Trace& out,
                   WekaReport& rep);

// `calls` are the parent's, which started at `start`.
void convert_subagent(const File& f, const json& r, const std::string& at,
                      const std::string& parent, const Fork* parent_from,
                      const std::vector<Call>& calls, double start,
                      std::map<std::string, std::string>& seen, Trace& out, WekaReport& rep) {
  const std::string agent = f.text(r, "agent_id", at);
  if (agent.empty()) f.fail(at + ".agent_id", "expected a non-empty string");
  if (auto [it, fresh] = seen.emplace(agent, at); !fresh)
    f.fail(at + ".agent_id", fmt::format("duplicate agent_id '{}' (also {})", agent, it->second));
  const double t = *f.seconds(r, "t", at, true);
  const double ran = f.seconds(r, "duration_ms", at, false, true).value_or(0);
  if (t - ran < calls[0].t)
    f.fail(at + ".t", fmt::format("the subagent would start before its parent's first call: t - "
                                  "duration_ms / 1000 = {} - {} < {}",
                                  t, ran, calls[0].t));
  ++rep.subagents;
  // The spawning call: the parent's last call that started no later than the subagent.
  size_t k = 0;
  while (k + 1 < calls.size() && calls[k + 1].t <= t - ran) ++k;
  const int depth = parent_from ? parent_from->depth + 1 : 1;
  if (depth > kMaxSubagentDepth)
    f.fail(at, fmt::format("subagents nested more than {} deep", kMaxSubagentDepth));
  const Fork from{parent, &calls[k], depth};
  convert_agent(f, f.need(r, "requests", at), at + ".requests", parent + "/" + agent,
                start + (t - ran), &from, out, rep);
}

void convert_agent(const File& f, const json& requests, const std::string& at,
                   const std::string& id, double start, const Fork* from, Trace& out,
                   WekaReport& rep) {
  if (!requests.is_array() || requests.empty())
    f.fail(at, "expected a non-empty array of requests, got " + shown(requests));
  std::vector<Call> calls;
  std::vector<size_t> subagents;
  for (size_t i = 0; i < requests.size(); ++i) {
    const json& r = requests[i];
    const std::string ri = fmt::format("{}[{}]", at, i);
    if (!r.is_object()) f.fail(ri, "expected an object, got " + shown(r));
    auto type = r.find("type");
    if (type != r.end() && !type->is_string())
      f.fail(ri + ".type", "expected a string, got " + shown(*type));
    if (type != r.end() && type->get<std::string>() == "subagent") {
      subagents.push_back(i);
      continue;
    }
    calls.push_back(parse_call(f, r, ri));
    if (calls.size() > 1 && calls.back().t < calls[calls.size() - 2].t)
      f.fail(ri + ".t", fmt::format("{} is before the previous call's {} ({})", calls.back().t,
                                    calls[calls.size() - 2].t, calls[calls.size() - 2].at));
  }
  if (calls.empty()) f.fail(at, "no model calls (only subagents)");
  rep.calls += static_cast<int64_t>(calls.size());
  out.push_back(convert_calls(f, calls, id, start, rep));
  if (from) mark_subagent(f, *from, calls[0], out.back(), rep);
  std::map<std::string, std::string> seen;  // agent_id -> where it was
  for (size_t i : subagents)
    convert_subagent(f, requests[i], fmt::format("{}[{}]", at, i), id, from, calls, start, seen,
                     out, rep);
}

void import_file(const std::string& path, Trace& out, WekaReport& rep) {
  const std::string text = read_input_file(path, "a Weka trace", kMaxWholeDataBytes);
  json doc;
  try {
    doc = parse_json_unique<json>(text, path);
  } catch (const json::exception& e) {
    throw InputError(path + ": <json>: " + e.what());
  }
  File f{path, 0, 0};
  if (!doc.is_object()) f.fail("<json>", "expected an object, got " + shown(doc));
  f.block = f.count(doc, "block_size", "", 1);
  std::string scope = "local";
  if (doc.contains("hash_id_scope")) scope = f.text(doc, "hash_id_scope", "");
  if (scope != "local" && scope != "global")
    f.fail("hash_id_scope", "expected \"local\" or \"global\", got " + shown(doc["hash_id_scope"]));
  const std::string name = fs::path(path).filename().string();
  f.scope = fnv1a(scope == "local" ? "weka-claude-code/" + name : "weka-claude-code");
  const size_t first = out.size();
  convert_agent(f, f.need(doc, "requests", ""), "requests", fs::path(path).stem().string(), 0,
                nullptr, out, rep);
  // The system prompt and tool definitions lead the file's own first prompt (Session::
  // shared_prompt), when the file gives both.
  if (doc.contains("system_tokens") && doc.contains("tool_tokens"))
    out[first].shared_prompt =
        std::min(f.count(doc, "system_tokens", "", 0) + f.count(doc, "tool_tokens", "", 0),
                 out[first].segments[0].input);
  auto where = [&](size_t i) { return path + ": " + out[i].id; };
  for (size_t i = first; i < out.size(); ++i) validate_session(out[i], where(i));
  // A file's forks name sessions of that file only, so its sessions are checked alone.
  const Trace mine(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  validate_forks(mine, [&](size_t i) { return where(first + i); });
  ++rep.files;
}

}  // namespace

Trace import_weka(const std::string& path, WekaReport* report) {
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == ".json")
        files.push_back(e.path().string());
    if (ec) throw InputError(path + ": cannot list: " + ec.message());
    if (files.empty()) throw InputError(path + ": no *.json files");
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  Trace t;
  WekaReport rep;
  for (const auto& file : files) import_file(file, t, rep);
  rep.sessions = static_cast<int64_t>(t.size());
  if (report) *report = rep;
  return t;
}

}  // namespace isim::trace
