// A candidate's plan results as JSON, exactly (plan_shards.h: the journal records).
#include "experiments/plan/plan_result_json.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::exp {

using Json = nlohmann::ordered_json;

namespace {

// Finite numbers as themselves (nlohmann writes them to round-trip); the rest as strings.
Json num(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// Reading, with "FILE:LINE: KEY: expected ..." on any mismatch.
struct Reader {
  const std::string& file;
  size_t line;

  [[noreturn]] void bad(const std::string& key, const char* what) const {
    throw InputError(fmt::format("{}:{}: {}: expected {}", file, line, key, what));
  }
  const Json& at(const Json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) bad(key, "a field of the record");
    return j[key];
  }
  double number(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (v.is_number()) return v.get<double>();
    if (v == "inf") return std::numeric_limits<double>::infinity();
    if (v == "-inf") return -std::numeric_limits<double>::infinity();
    if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
    bad(key, "a number");
  }
  int64_t integer(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (!v.is_number_integer()) bad(key, "an integer");
    return v.get<int64_t>();
  }
  bool flag(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (!v.is_boolean()) bad(key, "true or false");
    return v.get<bool>();
  }
  std::string text(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (!v.is_string()) bad(key, "a string");
    return v.get<std::string>();
  }
  const Json& list(const Json& j, const char* key) const {
    const Json& v = at(j, key);
    if (!v.is_array()) bad(key, "a list");
    return v;
  }
  std::vector<double> numbers(const Json& j, const char* key) const {
    std::vector<double> out;
    for (const auto& v : list(j, key)) out.push_back(number(Json{{"v", v}}, "v"));
    return out;
  }

  Verdict verdict(const Json& j) const {
    Verdict v;
    v.pass = flag(j, "pass");
    v.reason = text(j, "reason");
    v.values = numbers(j, "values");
    v.extrapolations = integer(j, "extrapolations");
    return v;
  }
  SearchResult search(const Json& j) const {
    SearchResult s;
    s.capacity = number(j, "capacity");
    s.failed_at = number(j, "failed_at");
    s.capped = flag(j, "capped");
    for (const auto& p : list(j, "probes"))
      s.probes.push_back(Probe{number(p, "rate"), verdict(at(p, "verdict"))});
    return s;
  }
  FleetSearch fleet(const Json& j) const {
    FleetSearch f;
    f.guess = integer(j, "guess");
    f.bound = integer(j, "bound");
    f.sized = integer(j, "sized");
    for (const auto& c : list(j, "checks"))
      f.checks.push_back(FleetCheck{integer(c, "replicas"), verdict(at(c, "verdict"))});
    return f;
  }
  Sizing sizing(const Json& j) const {
    Sizing s;
    s.feasible = flag(j, "feasible");
    s.replicas = integer(j, "replicas");
    s.gpus = integer(j, "gpus");
    s.cost_per_hour = number(j, "cost_per_hour");
    s.cost_per_million_output_tokens = number(j, "cost_per_million_output_tokens");
    return s;
  }
};

Json verdict_json(const Verdict& v) {
  Json j;
  j["pass"] = v.pass;
  j["reason"] = v.reason;
  j["values"] = Json::array();
  for (double x : v.values) j["values"].push_back(num(x));
  j["extrapolations"] = v.extrapolations;
  return j;
}

Json search_json(const SearchResult& s) {
  Json j;
  j["capacity"] = num(s.capacity);
  j["failed_at"] = num(s.failed_at);
  j["capped"] = s.capped;
  j["probes"] = Json::array();
  for (const auto& p : s.probes)
    j["probes"].push_back({{"rate", num(p.rate)}, {"verdict", verdict_json(p.verdict)}});
  return j;
}

Json fleet_json(const FleetSearch& f) {
  Json j;
  j["guess"] = f.guess;
  j["bound"] = f.bound;
  j["sized"] = f.sized;
  j["checks"] = Json::array();
  for (const auto& c : f.checks)
    j["checks"].push_back({{"replicas", c.replicas}, {"verdict", verdict_json(c.verdict)}});
  return j;
}

}  // namespace

Json candidate_result_json(const CandidateResult& c) {
  Json j;
  j["seeds"] = Json::array();
  for (const auto& s : c.seeds) j["seeds"].push_back(search_json(s));
  j["capacity"] = num(c.capacity);
  j["capacity_mean"] = num(c.capacity_mean);
  j["capacity_max"] = num(c.capacity_max);
  j["capped"] = c.capped;
  j["limited_by"] = c.limited_by;
  j["slo_values"] = Json::array();
  for (double x : c.slo_values) j["slo_values"].push_back(num(x));
  j["extrapolations"] = c.extrapolations;
  j["guess"] = c.guess;
  j["fleet"] = fleet_json(c.fleet);
  const Sizing& z = c.sizing;
  j["sizing"] = {{"feasible", z.feasible},
                 {"replicas", z.replicas},
                 {"gpus", z.gpus},
                 {"cost_per_hour", num(z.cost_per_hour)},
                 {"cost_per_million_output_tokens", num(z.cost_per_million_output_tokens)}};
  j["runs"] = c.runs;
  j["fleet_runs"] = c.fleet_runs;
  return j;
}

CandidateResult parse_candidate_result(const Json& j, const std::string& file, size_t line) {
  const Reader r{file, line};
  CandidateResult c;
  for (const auto& s : r.list(j, "seeds")) c.seeds.push_back(r.search(s));
  c.capacity = r.number(j, "capacity");
  c.capacity_mean = r.number(j, "capacity_mean");
  c.capacity_max = r.number(j, "capacity_max");
  c.capped = r.flag(j, "capped");
  c.limited_by = r.text(j, "limited_by");
  c.slo_values = r.numbers(j, "slo_values");
  c.extrapolations = r.integer(j, "extrapolations");
  c.guess = r.integer(j, "guess");
  c.fleet = r.fleet(r.at(j, "fleet"));
  c.sizing = r.sizing(r.at(j, "sizing"));
  const int64_t runs = r.integer(j, "runs"), fleet_runs = r.integer(j, "fleet_runs");
  if (runs < 0 || fleet_runs < 0) r.bad("runs", "counts >= 0");
  c.runs = static_cast<size_t>(runs);
  c.fleet_runs = static_cast<size_t>(fleet_runs);
  return c;
}

}  // namespace isim::exp
