// The weka-claude-code importer on the 58 real Claude Code sessions (../shared/data; skipped
// when absent): every file imports, and `trace stats`' figures (calls, subagents, resets, think
// times) match a count made here from the raw JSON, walking it with nlohmann::json by the
// rules of traces/weka.h and never through the importer.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_paths.h"
#include "tests/traces/trace_helpers.h"
#include "traces/jsonl.h"
#include "traces/stats.h"
#include "traces/weka.h"

using namespace isim::trace;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kDir = isim::test::shared_data() + "/weka-claude-code/traces";

struct Counts {
  int64_t files = 0, calls = 0, subagents = 0, parents = 0, most_subagents = 0;
  int64_t resets = 0, reset_agents = 0, waits = 0;
  double max_wait = 0;
};

size_t common_lead(const json& a, const json& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// The wait between two calls: think_time after a call with api_time, else the gap between the
// starts (less api_time when think_time is missing).
double wait_between(const json& prev, const json& next) {
  const double gap = next["t"].get<double>() - prev["t"].get<double>();
  if (!prev.contains("api_time")) return gap;
  if (!next.contains("think_time")) return std::max(0.0, gap - prev["api_time"].get<double>());
  return next["think_time"].get<double>();
}

void count_agent(const json& requests, Counts& c) {
  const json* prev = nullptr;
  int64_t subagents = 0, resets = 0;
  for (const json& r : requests) {
    if (r.value("type", "") == "subagent") {
      ++subagents;
      count_agent(r["requests"], c);
      continue;
    }
    ++c.calls;
    if (prev) {
      ++c.waits;
      c.max_wait = std::max(c.max_wait, wait_between(*prev, r));
      const json& before = (*prev)["hash_ids"];
      if (2 * common_lead(before, r["hash_ids"]) < before.size()) ++resets;
    }
    prev = &r;
  }
  c.subagents += subagents;
  c.parents += subagents > 0 ? 1 : 0;
  c.most_subagents = std::max(c.most_subagents, subagents);
  c.resets += resets;
  c.reset_agents += resets > 0 ? 1 : 0;
}

std::vector<std::string> files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

Counts count_raw() {
  Counts c;
  for (const std::string& f : files()) {
    std::ifstream in(f);
    count_agent(json::parse(in)["requests"], c);
    ++c.files;
  }
  return c;
}

// The cells of the line of `text` whose first cell is `first`.
std::vector<std::string> row_of(const std::string& text, const std::string& first) {
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    std::istringstream cells(l);
    std::vector<std::string> row;
    for (std::string c; cells >> c;) row.push_back(c);
    if (!row.empty() && row[0] == first) return row;
  }
  return {};
}

}  // namespace

TEST_CASE("weka data: all 58 sessions import; stats match a count from the raw JSON" *
          doctest::skip(isim::test::absent(!fs::exists(kDir)))) {
  const Counts c = count_raw();
  WekaReport rep;
  const Trace t = import_weka(kDir, &rep);
  // Figures of the data itself (docs/agent-workloads.md): 58 files, 10 with subagents, 30
  // subagents, 3,207 + 348 calls.
  CHECK(c.files == 58);
  CHECK(c.parents == 10);
  CHECK(c.subagents == 30);
  CHECK(c.calls == 3207 + 348);
  CHECK(rep.files == c.files);
  CHECK(rep.calls == c.calls);
  CHECK(rep.subagents == c.subagents);
  CHECK(rep.resets == c.resets);
  CHECK(t.size() == static_cast<size_t>(c.files + c.subagents));  // no more split sessions
  CHECK(rep.sessions == static_cast<int64_t>(t.size()));
  CHECK(rep.forks == c.subagents);
  CHECK(rep.ends + rep.ends_unmarked == c.subagents);
  CHECK(rep.max_ahead_tokens < 8000);

  const AgentStats a = agent_stats(t);
  CHECK(a.calls == c.calls);
  CHECK(a.subagents == c.subagents);
  CHECK(a.parents == c.parents);
  CHECK(a.most_subagents == c.most_subagents);
  CHECK(a.resets == c.resets);
  CHECK(a.reset_sessions == c.reset_agents);
  CHECK(a.intercepts == c.waits);
  CHECK(a.intercepts == c.calls - (c.files + c.subagents));  // every wait kept
  CHECK(a.max_think_s == c.max_wait);

  const std::string report = trace_stats(t);
  CHECK(report.find(fmt::format("resets: {} in {} sessions\n", c.resets, c.reset_agents)) !=
        std::string::npos);
  CHECK(report.find(fmt::format("subagents: {} (sessions with a fork) under {} parents",
                                c.subagents, c.parents)) != std::string::npos);
  const std::vector<std::string> all = row_of(report, "all");
  REQUIRE(all.size() == 7);
  CHECK(all[1] == std::to_string(c.waits));
  CHECK(all[6] == fmt::format("{:.6g}", c.max_wait));
  MESSAGE("weka: " << t.size() << " sessions, " << c.resets << " resets in " << c.reset_agents
                   << " sessions, " << c.waits << " waits, longest " << c.max_wait << " s");
}

TEST_CASE("weka data: each file alone, the signals, and a native round trip" *
          doctest::skip(isim::test::absent(!fs::exists(kDir)))) {
  const Trace t = import_weka(kDir);
  Trace joined;
  for (const std::string& f : files()) {
    const Trace one = import_weka(f);
    joined.insert(joined.end(), one.begin(), one.end());
  }
  CHECK(joined == t);
  for (const Session& s : t) {
    CAPTURE(s.id);
    const auto slash = s.id.rfind('/');
    const ContextEvent& first = s.segments[0].event;
    if (slash == std::string::npos) {
      CHECK(first.kind == ContextEventKind::kNone);
      continue;
    }
    CHECK(first.kind == ContextEventKind::kFork);
    CHECK(first.parent == s.id.substr(0, slash));
    // No subagent shares its first call's leading blocks with its parent in these files
    // (docs/agent-workloads.md): they run their own system prompt.
    CHECK(first.tokens == 0);
    if (s.segments.size() > 1 && s.segments.back().event.kind != ContextEventKind::kReset)
      CHECK(s.segments.back().event.kind == ContextEventKind::kEnd);
  }
  // trace_0002: in 15818 out 154, then in 16003 (31 new) after a 3 s tool wait, then 16162 (60).
  REQUIRE(t[0].id == "trace_0002");
  CHECK(t[0].segments[0] == Segment{15818, 154, Intercept{"tool", 3}});
  CHECK(t[0].segments[1] == Segment{31, 99, Intercept{"tool", 3}});
  CHECK(t[0].segments[2].input == 60);
  CHECK(t[0].prefix.hashes.size() == 247);
  // Its call 17 (t 692, in 44076) keeps only 237 of call 16's 683 blocks, after 452 s of a user
  // turn (call 16 ended its turn): a reset to 237 * 64 = 15168 tokens, 44076 - 15168 new.
  CHECK(t[0].segments[16].intercept == Intercept{"user", 452});
  CHECK(t[0].segments[17].event == ContextEvent{ContextEventKind::kReset, 15168, 15168, ""});
  CHECK(t[0].segments[17].input == 28908);
  CHECK(t[0].segments.size() == 33);
  std::ostringstream os;
  write_jsonl(os, t);
  std::istringstream in(os.str());
  CHECK(parse_jsonl(in, "weka.jsonl") == isim::test::as_written(t));
}
