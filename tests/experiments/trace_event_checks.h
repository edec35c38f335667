// Checks of a Chrome Trace Event Format file against the format's documented fields (the
// "Trace Event Format" document: JSON object form with traceEvents; every event has name, ph,
// pid, tid (counters: pid), ts in microseconds; "X" complete events a dur; "C" counters numeric
// args; "M" metadata process_name / thread_name with args.name, *_sort_index with
// args.sort_index; "i" instant events a scope s of g, p or t), plus what isim promises on top:
// X durations >= 0 and the spans of one session track never overlapping.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace isim::test {

// Every problem found, one line each ("" entries never; empty: valid).
inline std::vector<std::string> trace_event_problems(const nlohmann::json& doc) {
  std::vector<std::string> bad;
  auto fail = [&](size_t i, const std::string& what) {
    bad.push_back("event " + std::to_string(i) + ": " + what);
  };
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return {"not an object with a traceEvents array"};
  if (doc.contains("displayTimeUnit") && doc["displayTimeUnit"] != "ms" &&
      doc["displayTimeUnit"] != "ns")
    bad.push_back("displayTimeUnit is neither ms nor ns");
  if (doc.contains("otherData") && !doc["otherData"].is_object())
    bad.push_back("otherData is not an object");
  // (pid, tid) of the session tracks -> their spans (start, end).
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> spans;
  int64_t sessions_pid = -1;
  const auto& events = doc["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (!e.is_object()) {
      fail(i, "not an object");
      continue;
    }
    if (!e.contains("name") || !e["name"].is_string()) fail(i, "no string name");
    if (!e.contains("ph") || !e["ph"].is_string()) {
      fail(i, "no string ph");
      continue;
    }
    if (!e.contains("pid") || !e["pid"].is_number_integer()) fail(i, "no integer pid");
    const std::string ph = e["ph"];
    if (ph != "C" && (!e.contains("tid") || !e["tid"].is_number_integer()))
      fail(i, "no integer tid");
    if (ph != "M" && (!e.contains("ts") || !e["ts"].is_number() || e["ts"].get<double>() < 0))
      fail(i, "no number ts >= 0");
    if (e.contains("args") && !e["args"].is_object()) fail(i, "args is not an object");
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number()) {
        fail(i, "X without a number dur");
        continue;
      }
      if (e["dur"].get<double>() < 0) fail(i, "X with dur < 0");
      if (!e.contains("cat") || !e["cat"].is_string()) fail(i, "X without a string cat");
      if (e.value("cat", "") != "iteration" && e.contains("ts") && e["ts"].is_number())
        spans[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}].push_back(
            {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    } else if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty())
        fail(i, "C without args");
      else
        for (const auto& [k, v] : e["args"].items())
          if (!v.is_number()) fail(i, "C arg " + k + " is not a number");
    } else if (ph == "M") {
      const std::string n = e.value("name", "");
      const bool sort = n == "process_sort_index" || n == "thread_sort_index";
      if (n != "process_name" && n != "thread_name" && !sort) fail(i, "unknown metadata " + n);
      if (!e.contains("args") || !e["args"].is_object())
        fail(i, "M without args");
      else if (sort ? !e["args"].contains("sort_index") || !e["args"]["sort_index"].is_number_integer()
                    : !e["args"].contains("name") || !e["args"]["name"].is_string())
        fail(i, "M " + n + " without its " + (sort ? "integer sort_index" : "string name"));
      if (n == "process_name" && e["args"].value("name", "") == "sessions")
        sessions_pid = e["pid"].get<int64_t>();
    } else if (ph == "i") {
      const std::string s = e.value("s", "");
      if (s != "g" && s != "p" && s != "t") fail(i, "i with a scope other than g, p, t");
    } else {
      fail(i, "ph '" + ph + "' is none of X, C, M, i");
    }
  }
  if (sessions_pid < 0) bad.push_back("no process named sessions");
  for (auto& [track, list] : spans) {
    std::sort(list.begin(), list.end());
    for (size_t k = 1; k < list.size(); ++k)
      if (list[k].first < list[k - 1].second - 0.0005)  // less than 1 ns: decimal rounding
        bad.push_back("track pid " + std::to_string(track.first) + " tid " +
                      std::to_string(track.second) + ": spans overlap at ts " +
                      std::to_string(list[k].first));
  }
  return bad;
}

}  // namespace isim::test
