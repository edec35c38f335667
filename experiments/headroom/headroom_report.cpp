// headroom.json, headroom.csv and the printed table (experiments/headroom/headroom_report.h).
#include "experiments/headroom/headroom_report.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/csv.h"

namespace isim::exp {

namespace {

using Json = nlohmann::ordered_json;

std::string load_key(const HeadroomResult& r) {
  return r.knob.substr(r.knob.find('.') + 1);
}

Json or_null(double v, bool given) {
  return given ? Json(v) : Json(nullptr);
}

Json probe_json(const HeadroomProbe& p, const std::string& key) {
  Json j;
  j[key] = p.x;
  j["attainment"] = or_null(p.share, p.share >= 0);
  j["turn_attainment"] = or_null(p.turn_share, p.turn_share >= 0);
  j["pass"] = p.pass;
  j["limit"] = limit_name(p.limit);
  j["sessions"] = p.sessions;
  j["arrivals_s"] = p.arrivals_s;
  j["kv_peak"] = p.facts.kv_peak;
  j["preemptions"] = p.facts.preemptions;
  j["skipped"] = p.facts.skipped;
  j["overloaded"] = p.facts.overloaded;
  j["queue_growth_per_s"] = p.facts.queue_growth_per_s;
  j["ttft_miss"] = p.facts.ttft_miss;
  j["tpot_miss"] = p.facts.tpot_miss;
  j["other_miss"] = p.facts.other_miss;
  return j;
}

std::string num(double v) {
  return fmt::format("{}", v);
}

// A seed's answer in the table: "3.5", "64+" (above every doubling), "<0.002" (below all).
std::string seed_cell(const SeedSearch& s) {
  if (s.outcome == BisectResult::kAboveAll) return num(s.lo) + "+";
  if (s.outcome == BisectResult::kBelowAll) return "<" + num(s.hi);
  return num(s.lo);
}

}  // namespace

std::string headroom_json(const HeadroomResult& r, const Experiment& e) {
  const std::string key = load_key(r);
  Json j;
  j["name"] = r.name;
  j["knob"] = r.knob;
  j["unit"] = r.unit;
  j["start"] = r.start;
  j["target"] = r.knobs.target;
  j["tolerance"] = r.knobs.tolerance;
  j["duration_s"] = r.knobs.duration_s;
  Json seeds = Json::array();
  for (int64_t k = 0; k < r.knobs.seeds; ++k) seeds.push_back(e.seed + static_cast<uint64_t>(k));
  j["seeds"] = seeds;
  Json slo = Json::object();
  for (const auto& [metric, limit] : e.slo) slo[metric] = limit;
  if (e.turn_slo.request_ttft_s > 0) slo["request_ttft_s"] = e.turn_slo.request_ttft_s;
  if (e.turn_slo.itl_max_s > 0) slo["itl_max_s"] = e.turn_slo.itl_max_s;
  j["slo"] = slo;
  Json pols = Json::array();
  for (const auto& ph : r.policies) {
    Json pj;
    pj["policy"] = ph.policy;
    pj["mean"] = ph.mean;
    pj["worst"] = ph.worst;
    pj["worst_seed"] = ph.seeds.at(ph.worst_seed).seed;
    pj["limit"] = limit_name(ph.limit);
    pj["runs"] = ph.runs();
    Json sj = Json::array();
    for (const auto& s : ph.seeds) {
      Json one;
      one["seed"] = s.seed;
      one["bracket"] = outcome_name(s.outcome);
      one["pass"] = or_null(s.lo, s.lo > 0);
      one["fail"] = or_null(s.hi, s.hi > 0);
      const HeadroomProbe* f = s.first_fail();
      one["limit"] = limit_name(f ? f->limit : Limit::kNone);
      Json probes = Json::array();
      for (const auto& p : s.probes) probes.push_back(probe_json(p, key));
      one["probes"] = probes;
      sj.push_back(one);
    }
    pj["seeds"] = sj;
    pols.push_back(pj);
  }
  j["policies"] = pols;
  return j.dump(2) + "\n";
}

std::string headroom_csv(const HeadroomResult& r) {
  std::string out =
      join_csv({"policy", "seed", "probe", load_key(r), "attainment", "turn_attainment", "pass",
                "limit", "kv_peak", "preemptions", "overloaded", "queue_growth_per_s"});
  for (const auto& ph : r.policies)
    for (const auto& s : ph.seeds)
      for (size_t k = 0; k < s.probes.size(); ++k) {
        const HeadroomProbe& p = s.probes[k];
        out +=
            join_csv({ph.policy, fmt::format("{}", s.seed), fmt::format("{}", k), num(p.x),
                      p.share >= 0 ? num(p.share) : "", p.turn_share >= 0 ? num(p.turn_share) : "",
                      p.pass ? "1" : "0", limit_name(p.limit), num(p.facts.kv_peak),
                      fmt::format("{}", p.facts.preemptions), p.facts.overloaded ? "1" : "0",
                      num(p.facts.queue_growth_per_s)});
      }
  return out;
}

std::string headroom_table(const HeadroomResult& r) {
  std::string out = fmt::format(
      "headroom {}: highest {} ({}) with SLO attainment >= {}; {} seed(s), tolerance {}\n", r.name,
      r.knob, r.unit, r.knobs.target, r.knobs.seeds, r.knobs.tolerance);
  size_t w = 6;
  for (const auto& ph : r.policies) w = std::max(w, ph.policy.size());
  std::vector<std::string> cells;
  size_t cw = 5;
  for (const auto& ph : r.policies) {
    std::string c;
    for (const auto& s : ph.seeds) c += (c.empty() ? "" : " ") + seed_cell(s);
    cw = std::max(cw, c.size());
    cells.push_back(c);
  }
  out += fmt::format("{:<{}}  {:>8}  {:>8}  {:<{}}  {:>10}  {:>4}  {}\n", "policy", w, "mean",
                     "worst", "seeds", cw, "first fail", "runs", "limited by (at first fail)");
  for (size_t i = 0; i < r.policies.size(); ++i) {
    const PolicyHeadroom& ph = r.policies[i];
    const SeedSearch& worst = ph.seeds.at(ph.worst_seed);
    const HeadroomProbe* f = worst.first_fail();
    out += fmt::format("{:<{}}  {:>8.4g}  {:>8.4g}  {:<{}}  {:>10}  {:>4}  {}\n", ph.policy, w,
                       ph.mean, ph.worst, cells[i], cw, f ? num(f->x) : "-", ph.runs(),
                       f ? limit_why(f->limit, f->facts) : "- (passed every probe)");
  }
  // The shortest span of arrivals at a worst seed's answer (its passing probe at lo).
  double shortest = -1;
  for (const auto& ph : r.policies)
    for (const auto& p : ph.seeds.at(ph.worst_seed).probes)
      if (p.pass && p.x == ph.worst && (shortest < 0 || p.arrivals_s < shortest))
        shortest = p.arrivals_s;
  if (r.knob == "arrival.rate" && r.knobs.duration_s == 0 && shortest >= 0 &&
      shortest < kShortArrivals_s)
    out += fmt::format(
        "note: at an answer the spec's sessions arrive within {:.0f} s: a burst that short may "
        "pass where a steady load fails; --duration {:.0f} keeps each probe's arrivals that "
        "long\n",
        shortest, kShortArrivals_s);
  return out;
}

}  // namespace isim::exp
