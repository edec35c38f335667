// A plan's results: ranking, savings lines, warnings, the terminal table and plan.csv.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "experiments/plan/plan.h"
#include "experiments/spec/cluster_spec.h"
#include "experiments/sweep/sweep.h"

namespace isim::exp {

namespace {

const Deployment& deployment_of(const PlanResult& r, const CandidateResult& c) {
  return r.spec->deployments[c.candidate->deployment];
}

std::string router_of(const CandidateResult& c) {
  return c.router ? c.router->label : "";
}

std::string split_of(const CandidateResult& c) {
  return c.split ? c.split->label : "mixed";
}

std::string planner_of(const CandidateResult& c) {
  return c.planner ? c.planner->label : "static";
}

// Whether the plan has P:D splits (then every result names its split) or planners.
bool shows_split(const PlanSpec& p) {
  return p.pd_splits.size() > 1 || !p.pd_splits.front().mixed();
}
bool shows_planner(const PlanSpec& p) {
  return p.planners.size() > 1 || p.planners.front().label != "static";
}

// The sized fleet's prefill:decode counts ("" when mixed or infeasible).
std::string roles_of(const CandidateResult& c) {
  if (!c.split || c.split->mixed() || !c.sizing.feasible) return "";
  const auto n = static_cast<int32_t>(c.sizing.replicas);
  const auto roles = pd_ratio_roles(c.split->prefill, c.split->decode, n);
  const auto prefill = std::count(roles.begin(), roles.end(), cluster::Role::kPrefill);
  return fmt::format("{}:{}", prefill, n - prefill);
}

// The policy, and the router, split and planner when the plan compares several:
// "preserve/round-robin", "preserve/1:3/dynamo-threshold".
std::string choice(const PlanResult& r, const CandidateResult& c) {
  std::string s = c.candidate->policy;
  auto add = [&s](const std::string& part) {
    s += '/';
    s += part;
  };
  if (r.spec->routers.size() > 1 && c.router) add(router_of(c));
  if (shows_split(*r.spec)) add(split_of(c));
  if (shows_planner(*r.spec)) add(planner_of(c));
  return s;
}

std::string label(const PlanResult& r, const CandidateResult& c) {
  return deployment_of(r, c).name + "/" + choice(r, c);
}

// What the capacity search found worth a warning; the same for every router.
std::vector<std::string> capacity_warnings(const PlanSpec& spec, const CandidateResult& c) {
  std::vector<std::string> w;
  if (c.extrapolations > 0)
    w.push_back(fmt::format("profile extrapolated beyond its grid {} times in the capacity runs",
                            c.extrapolations));
  if (c.capped)
    w.push_back(fmt::format("passes at search.max_rate {}: the capacity is at least that",
                            spec.search.max_rate));
  if (c.capacity > 0) return w;
  double lowest = c.seeds.empty() ? 0 : c.seeds.front().failed_at;
  for (const auto& s : c.seeds) lowest = std::min(lowest, s.failed_at);
  w.push_back(
      fmt::format("infeasible: fails even at {:.4g} sessions/s ({})", lowest, c.limited_by));
  return w;
}

// A candidate whose capacity search passed but whose fleet met the SLOs at no simulated size.
std::vector<std::string> fleet_warnings(const CandidateResult& c) {
  if (c.guess == 0 || c.sizing.feasible) return {};
  const auto& ch = c.fleet.checks;
  return {fmt::format("infeasible: SLOs not met up to {} replicas (guessed {}; {}: {})",
                      c.fleet.bound, c.guess, ch.empty() ? 0 : ch.back().replicas,
                      ch.empty() ? "" : ch.back().verdict.reason)};
}

// Shortest round-trip text of `v` rounded to `digits` decimals (money, percentages).
std::string rounded(double v, int digits) {
  const double f = std::pow(10.0, digits);
  double x = std::round(v * f) / f;
  if (x == 0) x = 0;  // no "-0"
  return fmt::format("{}", x);
}

// The cost of the dearest feasible policy on each deployment (the savings baseline).
std::map<size_t, double> dearest(const PlanResult& r) {
  std::map<size_t, double> m;
  for (const auto& c : r.ranked)
    if (c.sizing.feasible) {
      double& d = m[c.candidate->deployment];
      d = std::max(d, c.sizing.cost_per_hour);
    }
  return m;
}

// Three significant digits, without an exponent for large rates.
std::string rate_text(double r) {
  return r >= 100 ? fmt::format("{:.0f}", r) : fmt::format("{:.3g}", r);
}

std::string flags(const PlanResult& r, const CandidateResult& c) {
  std::string f;
  auto add = [&](const std::string& s) {
    if (!f.empty()) f += ';';
    f += s;
  };
  if (deployment_of(r, c).profile_source == "analytic") add("analytic");
  if (c.extrapolations > 0) add(fmt::format("extrapolated({})", c.extrapolations));
  if (c.capped) add("capped");
  if (!c.sizing.feasible) add("infeasible");
  return f;
}

// The split (with the sized fleet's counts) and planner columns after "router", when the plan
// has those axes.
void add_layout_columns(const PlanResult& r, std::vector<std::vector<std::string>>& rows,
                        std::vector<bool>& left) {
  const bool split = shows_split(*r.spec), planner = shows_planner(*r.spec);
  if (!split && !planner) return;
  const size_t at = 5;  // after "router"
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::string> cells;
    const CandidateResult* c = i == 0 ? nullptr : &r.ranked[i - 1];
    if (split) {
      const std::string roles = c ? roles_of(*c) : "";
      cells.push_back(!c ? "split" : split_of(*c) + (roles.empty() ? "" : " (" + roles + ")"));
    }
    if (planner) cells.push_back(c ? planner_of(*c) : "planner");
    rows[i].insert(rows[i].begin() + at, cells.begin(), cells.end());
  }
  left.insert(left.begin() + at, (split ? 1 : 0) + (planner ? 1 : 0), true);
}

// "4 x DP16/EP16" for a sized fleet of groups, the group alone otherwise.
std::string fleet_layout(const PlanResult& r, const CandidateResult& c) {
  const std::string g = group_layout(deployment_of(r, c));
  return c.sizing.feasible ? fmt::format("{} x {}", c.sizing.replicas, g) : g;
}

// The `layout` column before "GPUs" when the plan has DP/EP groups.
void add_group_column(const PlanResult& r, std::vector<std::vector<std::string>>& rows,
                      std::vector<bool>& left) {
  if (!has_groups(*r.spec)) return;
  const size_t at = 11;  // after "replicas"
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].insert(rows[i].begin() + at, i == 0 ? "layout" : fleet_layout(r, r.ranked[i - 1]));
  rows[0][6] = "capacity/unit";  // a replica, or a DP/EP group
  left.insert(left.begin() + at, true);
}

// "kimi/preserve: 64 GB300 GPUs as 4 groups of DP16/EP16 (16 GPUs each)", per sized fleet of
// groups.
std::string group_lines(const PlanResult& r) {
  std::string out;
  for (const auto& c : r.ranked) {
    const Deployment& d = deployment_of(r, c);
    if (!d.parallel() || !c.sizing.feasible) continue;
    out += fmt::format("{}: {} {} GPUs as {} group{} of {} ({} GPUs each)\n", label(r, c),
                       c.sizing.gpus, d.gpu, c.sizing.replicas, c.sizing.replicas == 1 ? "" : "s",
                       group_layout(d), d.gpus_per_group());
  }
  return out;
}

}  // namespace

std::string group_layout(const Deployment& d) {
  std::vector<std::string> parts;
  if (d.parallel()) parts.push_back(fmt::format("DP{}", d.par.dp));
  if (d.tp > 1 || !d.parallel()) parts.push_back(fmt::format("TP{}", d.tp));
  if (d.par.ep) parts.push_back(fmt::format("EP{}", d.gpus_per_group()));
  std::string s;
  for (const auto& x : parts) s += (s.empty() ? "" : "/") + x;
  return s;
}

bool has_groups(const PlanSpec& p) {
  return std::any_of(p.deployments.begin(), p.deployments.end(),
                     [](const Deployment& d) { return d.parallel(); });
}

void rank_plan(PlanResult& r) {
  std::stable_sort(r.ranked.begin(), r.ranked.end(),
                   [](const CandidateResult& a, const CandidateResult& b) {
                     if (a.sizing.feasible != b.sizing.feasible) return a.sizing.feasible;
                     if (a.sizing.cost_per_hour != b.sizing.cost_per_hour)
                       return a.sizing.cost_per_hour < b.sizing.cost_per_hour;
                     if (a.sizing.gpus != b.sizing.gpus) return a.sizing.gpus < b.sizing.gpus;
                     return a.capacity > b.capacity;
                   });
  const PlanSpec& spec = *r.spec;

  // Warnings: analytic profiles once per deployment, the rest per candidate.
  r.warnings.clear();
  for (const auto& d : spec.deployments)
    if (d.profile_source == "analytic")
      r.warnings.push_back(fmt::format(
          "{}: {} is an analytic (roofline) profile, not measured: its capacities are estimates",
          d.name, std::filesystem::path(d.profile).filename().string()));
  std::set<const Candidate*> seen;  // capacity warnings once per deployment and policy
  for (auto& c : r.ranked) {
    c.warnings = capacity_warnings(spec, c);
    if (seen.insert(c.candidate).second)
      for (const auto& w : c.warnings)
        r.warnings.push_back(deployment_of(r, c).name + "/" + c.candidate->policy + ": " + w);
    for (const auto& w : fleet_warnings(c)) {
      c.warnings.push_back(w);
      r.warnings.push_back(label(r, c) + ": " + w);
    }
  }

  // Savings: per deployment, the cheapest policy (and router) against every dearer or
  // infeasible one.
  r.savings.clear();
  for (size_t di = 0; di < spec.deployments.size(); ++di) {
    std::vector<const CandidateResult*> mine;
    for (const auto& c : r.ranked)
      if (c.candidate->deployment == di) mine.push_back(&c);  // cheapest first
    if (mine.size() < 2 || !mine.front()->sizing.feasible) continue;
    const auto& best = *mine.front();
    const auto& d = spec.deployments[di];
    std::string others;
    const CandidateResult* worst = nullptr;
    for (size_t i = 1; i < mine.size(); ++i) {
      const auto& c = *mine[i];
      if (c.sizing.feasible && c.sizing.cost_per_hour <= best.sizing.cost_per_hour) continue;
      others += others.empty() ? "" : ", ";
      if (c.sizing.feasible) {
        others += fmt::format("{} needs {}", choice(r, c), c.sizing.gpus);
        if (!worst || c.sizing.cost_per_hour > worst->sizing.cost_per_hour) worst = &c;
      } else {
        others += fmt::format("{} cannot meet the SLOs", choice(r, c));
      }
    }
    if (others.empty()) continue;
    std::string line =
        fmt::format("{}: {} needs {} {} GPU{} where {}", d.name, choice(r, best), best.sizing.gpus,
                    d.gpu, best.sizing.gpus == 1 ? "" : "s", others);
    if (worst)
      line += fmt::format(" (${:.2f}/h instead of ${:.2f}/h: {:.0f}% less)",
                          best.sizing.cost_per_hour, worst->sizing.cost_per_hour,
                          100.0 * (1 - best.sizing.cost_per_hour / worst->sizing.cost_per_hour));
    r.savings.push_back(line);
  }
}

std::string PlanResult::csv() const {
  const PlanSpec& p = *spec;
  std::vector<std::string> h = {"rank",
                                "deployment",
                                "gpu",
                                "profile",
                                "profile_source",
                                "tp",
                                "price_per_gpu_hour",
                                "policy",
                                "router",
                                "capacity_rps",
                                "capacity_mean_rps",
                                "capacity_max_rps"};
  for (auto s : p.seeds) h.push_back(fmt::format("capacity_seed_{}", s));
  for (const char* k : {"peak_rate", "replicas_guess", "replicas", "fleet_simulated",
                        "fleet_limited_by", "gpus", "cost_per_hour", "output_tokens_per_session",
                        "cost_per_million_output_tokens", "saving_pct", "limited_by"})
    h.emplace_back(k);
  for (const auto& s : p.slos) h.push_back(s.key);
  for (const auto& s : p.slos) h.push_back("headroom_pct." + s.key);
  for (const char* k :
       {"extrapolations", "runs", "fleet_runs", "warnings", "pd_split", "planner", "pd_roles"})
    h.emplace_back(k);
  const bool groups = has_groups(p);
  if (groups)
    for (const char* k : {"dp", "ep", "ep_overlap", "expert_skew", "gpus_per_group", "layout"})
      h.emplace_back(k);
  std::string out = join_csv(h);
  const auto base = dearest(*this);
  for (size_t i = 0; i < ranked.size(); ++i) {
    const auto& c = ranked[i];
    const auto& d = deployment_of(*this, c);
    const bool ok = c.sizing.feasible;
    std::vector<std::string> row = {std::to_string(i + 1),
                                    d.name,
                                    d.gpu,
                                    std::filesystem::path(d.profile).filename().string(),
                                    d.profile_source,
                                    std::to_string(d.tp),
                                    fmt::format("{}", d.price_per_gpu_hour),
                                    c.candidate->policy,
                                    router_of(c),
                                    fmt::format("{}", c.capacity),
                                    fmt::format("{}", c.capacity_mean),
                                    fmt::format("{}", c.capacity_max)};
    for (const auto& s : c.seeds) row.push_back(fmt::format("{}", s.capacity));
    row.push_back(fmt::format("{}", p.peak_rate));
    row.push_back(c.guess > 0 ? std::to_string(c.guess) : "");
    row.push_back(ok ? std::to_string(c.sizing.replicas) : "");
    row.push_back(c.fleet.simulated());
    row.push_back(c.fleet.limited_by());
    row.push_back(ok ? std::to_string(c.sizing.gpus) : "");
    row.push_back(ok ? rounded(c.sizing.cost_per_hour, 4) : "");
    row.push_back(fmt::format("{}", output_tokens_per_session));
    row.push_back(ok ? rounded(c.sizing.cost_per_million_output_tokens, 4) : "");
    row.push_back(
        ok ? rounded(100.0 * (1 - c.sizing.cost_per_hour / base.at(c.candidate->deployment)), 2)
           : "");
    row.push_back(c.limited_by);
    for (size_t k = 0; k < p.slos.size(); ++k)
      row.push_back(ok ? fmt::format("{}", c.slo_values[k]) : "");
    for (size_t k = 0; k < p.slos.size(); ++k)
      row.push_back(ok ? rounded(100.0 * (1 - c.slo_values[k] / p.slos[k].limit), 2) : "");
    row.push_back(std::to_string(c.extrapolations));
    row.push_back(std::to_string(c.runs));
    row.push_back(std::to_string(c.fleet_runs));
    row.push_back(flags(*this, c));
    row.push_back(split_of(c));
    row.push_back(planner_of(c));
    row.push_back(roles_of(c));
    if (groups) {
      for (const auto& x :
           {std::to_string(d.par.dp), std::string(d.par.ep ? "true" : "false"),
            fmt::format("{}", d.par.ep_overlap), fmt::format("{}", d.par.expert_skew),
            std::to_string(d.gpus_per_group()), fleet_layout(*this, c)})
        row.push_back(x);
    }
    out += join_csv(row);
  }
  return out;
}

std::string PlanResult::table() const {
  const PlanSpec& p = *spec;
  std::vector<std::vector<std::string>> rows = {
      {"#", "deployment", "gpu", "policy", "router", "tp", "capacity/replica", "seeds min-max",
       "guess", "simulated", "replicas", "GPUs", "$/hour", "$/M out tok", "saving", "limited by",
       "warnings"}};
  const auto base = dearest(*this);
  for (size_t i = 0; i < ranked.size(); ++i) {
    const auto& c = ranked[i];
    const auto& d = deployment_of(*this, c);
    const bool ok = c.sizing.feasible;
    double saving = ok ? 1 - c.sizing.cost_per_hour / base.at(c.candidate->deployment) : 0;
    rows.push_back({std::to_string(i + 1), d.name, d.gpu, c.candidate->policy, router_of(c),
                    std::to_string(d.tp), rate_text(c.capacity) + (c.capped ? "+" : ""),
                    rate_text(c.capacity) + "-" + rate_text(c.capacity_max),
                    c.guess > 0 ? std::to_string(c.guess) : "-", c.fleet.simulated(),
                    ok ? std::to_string(c.sizing.replicas) : "-",
                    ok ? std::to_string(c.sizing.gpus) : "-",
                    ok ? fmt::format("{:.2f}", c.sizing.cost_per_hour) : "-",
                    ok ? fmt::format("{:.3f}", c.sizing.cost_per_million_output_tokens) : "-",
                    ok && saving > 0 ? fmt::format("{:.0f}%", 100 * saving) : "", c.limited_by,
                    flags(*this, c)});
  }
  // Text columns left-aligned, numbers right-aligned.
  std::vector<bool> left = {false, true,  true,  true,  true,  false, false, false, false,
                            true,  false, false, false, false, false, true,  true};
  add_group_column(*this, rows, left);
  add_layout_columns(*this, rows, left);
  std::vector<size_t> w(rows.front().size(), 0);
  for (const auto& r : rows)
    for (size_t k = 0; k < r.size(); ++k) w[k] = std::max(w[k], r[k].size());
  std::string out = fmt::format(
      "plan {}: peak {} sessions/s; capacity in sessions/s per replica{} (lowest of {} seed{}); "
      "fleets simulated at the peak (pass: every seed); {:.1f} output tokens/session\n",
      p.name, p.peak_rate, has_groups(p) ? " or DP/EP group" : "", p.seeds.size(),
      p.seeds.size() == 1 ? "" : "s", output_tokens_per_session);
  for (const auto& r : rows) {
    std::string line;
    for (size_t k = 0; k < r.size(); ++k) {
      if (k) line += "  ";
      line += left[k] ? fmt::format("{:<{}}", r[k], w[k]) : fmt::format("{:>{}}", r[k], w[k]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out + group_lines(*this);
}

}  // namespace isim::exp
