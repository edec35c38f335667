#include "traces/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <utility>

namespace isim::trace {
namespace {

std::string num(double x) {
  return fmt::format("{:.6g}", x);
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Rows of cells; the first column is left-aligned, the others right-aligned.
std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t c = 0; c < r.size(); ++c)
      line +=
          c == 0 ? fmt::format("{:<{}}", r[c], width[c]) : fmt::format("  {:>{}}", r[c], width[c]);
    // Trailing blanks come from padding an empty last cell; strip them for clean diffs.
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

// mean, p50, p99, max of `v` (sorted here).
std::vector<std::string> summary(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {num(mean(v)), num(percentile_nearest_rank(v, 50)), num(percentile_nearest_rank(v, 99)),
          num(v.back())};
}

// "mean M, p50 A, p90 B, max C" of `v` (sorted here, non-empty).
std::string spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return fmt::format("mean {}, p50 {}, p90 {}, max {}", num(mean(v)),
                     num(percentile_nearest_rank(v, 50)), num(percentile_nearest_rank(v, 90)),
                     num(v.back()));
}

// The tokens segment k (k >= 1) adds to its context.
double added_tokens(const Segment& seg) {
  int64_t n = seg.input + seg.output;
  if (seg.event.kind == ContextEventKind::kReset) n += seg.event.tokens - seg.event.shared;
  return static_cast<double>(n);
}

// count, mean, p50, p90, p99, max of `v` (non-empty), as table cells after `name`.
std::vector<std::string> think_row(const std::string& name, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::string> row = {name, std::to_string(v.size()), num(mean(v))};
  for (double p : {50.0, 90.0, 99.0}) row.push_back(num(percentile_nearest_rank(v, p)));
  row.push_back(num(v.back()));
  return row;
}

std::string think_table(const Trace& t) {
  std::map<std::string, std::vector<double>> kinds;  // sorted by name
  std::vector<double> all;
  for (const Session& s : t)
    for (const Segment& seg : s.segments)
      if (seg.intercept) {
        kinds[seg.intercept->kind].push_back(seg.intercept->duration_s);
        all.push_back(seg.intercept->duration_s);
      }
  std::string out = "think time (intercept durations, s)\n";
  if (all.empty()) return out + "  none\n";
  std::vector<std::vector<std::string>> rows = {
      {"kind", "count", "mean", "p50", "p90", "p99", "max"}, think_row("all", all)};
  for (const auto& [name, v] : kinds) rows.push_back(think_row(name, v));
  return out + table(rows, "  ");
}

std::string agent_lines(const Trace& t) {
  const AgentStats a = agent_stats(t);
  std::vector<double> calls, growth;
  for (const Session& s : t) {
    calls.push_back(static_cast<double>(s.segments.size()));
    for (size_t k = 1; k < s.segments.size(); ++k) growth.push_back(added_tokens(s.segments[k]));
  }
  std::string out = "model calls per session: " + spread(calls) + "\n";
  out += fmt::format("subagents: {} (sessions with a fork)", a.subagents);
  if (a.subagents > 0)
    out += fmt::format(" under {} parents, per parent mean {}, max {}", a.parents,
                       num(static_cast<double>(a.subagents) / static_cast<double>(a.parents)),
                       a.most_subagents);
  out += fmt::format("\nresets: {} in {} sessions\n", a.resets, a.reset_sessions);
  out += "context growth per call after the first (tokens added): ";
  out += growth.empty() ? std::string("n/a") : spread(growth);
  out += fmt::format("\nmax context: {} tokens\n", a.max_context);
  return out + think_table(t);
}

struct KindStats {
  std::vector<double> durations;
  std::vector<double> returned;
  int64_t sessions = 0;  // sessions with at least one intercept of this kind
};

}  // namespace

double percentile_nearest_rank(const std::vector<double>& sorted, double p) {
  const double n = static_cast<double>(sorted.size());
  // p * n before dividing keeps e.g. p99 of 100 values exact (0.99 * 100 is not 99 in binary).
  const auto rank = static_cast<size_t>(std::clamp(std::ceil(p * n / 100.0), 1.0, n));
  return sorted[rank - 1];
}

AgentStats agent_stats(const Trace& t) {
  AgentStats a;
  std::map<std::string, int64_t> per_parent;
  for (const Session& s : t) {
    a.calls += static_cast<int64_t>(s.segments.size());
    a.max_context = std::max(a.max_context, s.max_context());
    int64_t resets = 0;
    for (const Segment& seg : s.segments) {
      if (seg.event.kind == ContextEventKind::kReset) ++resets;
      if (!seg.intercept) continue;
      ++a.intercepts;
      a.max_think_s = std::max(a.max_think_s, seg.intercept->duration_s);
    }
    a.resets += resets;
    a.reset_sessions += resets > 0 ? 1 : 0;
    if (!s.segments.empty() && s.segments[0].event.kind == ContextEventKind::kFork) {
      ++a.subagents;
      a.most_subagents = std::max(a.most_subagents, ++per_parent[s.segments[0].event.parent]);
    }
  }
  a.parents = static_cast<int64_t>(per_parent.size());
  return a;
}

PrefixStats prefix_stats(const Trace& t) {
  PrefixStats p;
  std::set<std::pair<int64_t, uint64_t>> seen;
  std::set<int64_t> sizes;
  for (const Session& s : t) {
    if (s.prefix.hashes.empty()) continue;
    ++p.sessions;
    sizes.insert(s.prefix.block_tokens);
    for (uint64_t h : s.prefix.hashes) {
      ++p.blocks;
      if (!seen.emplace(s.prefix.block_tokens, h).second) ++p.repeated;
    }
  }
  p.distinct = static_cast<int64_t>(seen.size());
  p.block_tokens.assign(sizes.begin(), sizes.end());
  return p;
}

std::string trace_stats(const Trace& t) {
  if (t.empty()) return "sessions      0\n";
  std::map<std::string, KindStats> kinds;  // sorted by name
  std::vector<double> prompts, finals, arrivals;
  double outputs = 0;
  int64_t segments = 0;
  for (const Session& s : t) {
    std::set<std::string> seen;
    for (size_t k = 0; k < s.segments.size(); ++k) {
      const auto& ic = s.segments[k].intercept;
      if (!ic || k + 1 == s.segments.size()) continue;
      KindStats& ks = kinds[ic->kind];
      ks.durations.push_back(ic->duration_s);
      ks.returned.push_back(static_cast<double>(s.segments[k + 1].input));
      if (seen.insert(ic->kind).second) ++ks.sessions;
    }
    segments += static_cast<int64_t>(s.segments.size());
    prompts.push_back(s.segments.empty() ? 0.0 : static_cast<double>(s.segments[0].input));
    finals.push_back(static_cast<double>(s.max_context()));
    arrivals.push_back(s.arrival_s);
    outputs += static_cast<double>(s.total_output());
  }

  const auto [first, last] = std::minmax_element(arrivals.begin(), arrivals.end());
  const double span = *last - *first;
  const std::string rate =
      span > 0 ? num(static_cast<double>(t.size() - 1) / span) + " sessions/s" : "n/a";
  std::string out;
  out += fmt::format("{:<14}{}\n", "sessions", t.size());
  out += fmt::format("{:<14}{}\n", "segments", segments);
  out += fmt::format("{:<14}{} s ({} .. {})\n", "arrival span", num(span), num(*first), num(*last));
  out += fmt::format("{:<14}{}\n", "mean rate", rate);

  out += "intercepts\n";
  if (kinds.empty()) {
    out += "  none\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"kind", "count", "calls/session", "mean_s", "p50_s", "p99_s", "max_s", "returned"}};
    for (const auto& [name, ks] : kinds) {
      std::vector<std::string> row = {
          name, std::to_string(ks.durations.size()),
          num(static_cast<double>(ks.durations.size()) / static_cast<double>(ks.sessions))};
      for (auto& cell : summary(ks.durations)) row.push_back(std::move(cell));
      row.push_back(num(mean(ks.returned)));
      rows.push_back(std::move(row));
    }
    out += table(rows, "  ");
  }

  out += "context (tokens)\n";
  std::vector<std::string> prompt_row = {"prompt"}, final_row = {"final"};
  for (auto& cell : summary(prompts)) prompt_row.push_back(std::move(cell));
  for (auto& cell : summary(finals)) final_row.push_back(std::move(cell));
  out += table({{"", "mean", "p50", "p99", "max"}, prompt_row, final_row}, "  ");
  out += "output tokens per session: mean " + num(outputs / static_cast<double>(t.size())) + "\n";
  const PrefixStats p = prefix_stats(t);
  if (p.sessions > 0) {
    std::string sizes;
    for (int64_t b : p.block_tokens) sizes += fmt::format("{}{}", sizes.empty() ? "" : ",", b);
    out += fmt::format(
        "prefix hashes: {} sessions, block_tokens {}, {} blocks, {} distinct, repeated-block "
        "fraction {}\n",
        p.sessions, sizes, p.blocks, p.distinct, num(p.repeated_fraction()));
  }
  return out + agent_lines(t);
}

}  // namespace isim::trace
