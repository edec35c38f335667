// Capacity planning: the rate search on synthetic capacity curves, divergence detection, the
// replica and cost arithmetic, ranking and savings, a plan whose answer is computed by hand from
// a linear profile, the drain-deadline cut, determinism across --jobs, and the plots.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/plan/plan.h"
#include "experiments/sweep/sweep.h"
#include "tests/experiments/plan_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

using test::hand_plan;
using test::run_isim;

exp::Verdict verdict(bool pass) {
  exp::Verdict v;
  v.pass = pass;
  if (!pass) v.reason = "synthetic";
  return v;
}

std::vector<double> rates(const exp::SearchResult& r) {
  std::vector<double> v;
  for (const auto& p : r.probes) v.push_back(p.rate);
  return v;
}

}  // namespace

TEST_CASE("the search brackets and bisects a monotone capacity curve") {
  exp::SearchSpec s;
  s.start_rate = 1;
  s.tolerance = 0.05;
  s.max_rate = 100;
  s.min_rate = 0.1;
  SUBCASE("doubling up from the start, then bisection to the tolerance") {
    auto r = exp::find_capacity([](double rate) { return verdict(rate <= 7.3); }, s);
    CHECK(rates(r) == std::vector<double>{1, 2, 4, 8, 6, 7, 7.5, 7.25});
    CHECK(r.capacity == 7.25);
    CHECK(r.failed_at == 7.5);
    CHECK_FALSE(r.capped);
    CHECK(r.failed_at - r.capacity <= s.tolerance * r.capacity);
  }
  SUBCASE("halving down when the start rate fails") {
    auto r = exp::find_capacity([](double rate) { return verdict(rate <= 0.3); }, s);
    CHECK(r.capacity <= 0.3);
    CHECK(r.failed_at > 0.3);
    CHECK(r.failed_at - r.capacity <= s.tolerance * r.capacity);
    CHECK(r.probes[0].rate == 1);
    CHECK(r.probes[1].rate == 0.5);
    CHECK(r.probes[2].rate == 0.25);
  }
  SUBCASE("a candidate passing at max_rate is capped there") {
    s.max_rate = 10;
    auto r = exp::find_capacity([](double) { return verdict(true); }, s);
    CHECK(rates(r) == std::vector<double>{1, 2, 4, 8, 10});
    CHECK(r.capacity == 10);
    CHECK(r.capped);
  }
  SUBCASE("a candidate failing down to min_rate is infeasible") {
    auto r = exp::find_capacity([](double) { return verdict(false); }, s);
    CHECK(rates(r) == std::vector<double>{1, 0.5, 0.25, 0.125});
    CHECK(r.capacity == 0);
  }
}

TEST_CASE("a queue growing faster than the divergence fraction of the rate diverges") {
  auto series = [](double slope, double noise) {
    std::vector<sim::TimeSample> ts;
    for (int t = 0; t <= 100; ++t) {
      sim::TimeSample s;
      s.t_s = t;
      s.waiting = static_cast<int64_t>(std::floor(slope * t + (t % 2 ? noise : 0)));
      ts.push_back(s);
    }
    return ts;
  };
  // Threshold at rate 5 and fraction 0.05: 0.25 sessions/s.
  CHECK(exp::queue_diverges(series(0.5, 0), 20, 100, 5, 0.05));
  CHECK_FALSE(exp::queue_diverges(series(0.1, 0), 20, 100, 5, 0.05));
  CHECK_FALSE(exp::queue_diverges(series(0, 30), 20, 100, 5, 0.05));  // noisy but flat
  // Swapped sessions wait for the GPU too.
  auto sw = series(0, 0);
  for (auto& s : sw) s.swapped = static_cast<int64_t>(s.t_s);
  CHECK(exp::queue_diverges(sw, 20, 100, 5, 0.05));
  // Only the measured span counts: growth after it (the drain) is not divergence.
  auto late = series(0, 0);
  for (auto& s : late)
    if (s.t_s > 80) s.waiting = static_cast<int64_t>(10 * (s.t_s - 80));
  CHECK_FALSE(exp::queue_diverges(late, 20, 80, 5, 0.05));
  CHECK(exp::queue_diverges(late, 20, 100, 5, 0.05));
}

TEST_CASE("an overloaded run is judged diverged from its queue, not waited out") {
  // 400 sessions 1/rate apart, each a 125 ms prefill: 8 sessions/s is the service rate.
  auto run_at = [](double rate) {
    trace::Trace t;
    for (int i = 0; i < 400; ++i) {
      trace::Session s;
      s.id = fmt::format("s{}", i);
      s.arrival_s = i / rate;
      s.segments = {test::seg(115, 1)};
      t.push_back(s);
    }
    sim::EngineConfig cfg;
    cfg.max_num_batched_tokens = 116;
    cfg.gpu_blocks = 1000;
    cfg.activation_reserve_gib = 0;
    cfg.cpu_blocks = 0;
    return test::run(t, "discard", cfg);
  };
  std::vector<exp::Slo> loose = {{"ttft_s.p99", 4, "p99", 1000.0}};  // ttft_s is metric 4
  REQUIRE(exp::slo_metrics()[4].name == "ttft_s");
  const double span7 = 399 / 7.0, span10 = 399 / 10.0;
  auto ok = exp::judge_run(run_at(7), loose, 7, 0.2 * span7, span7, 0.05);
  REQUIRE_MESSAGE(ok.pass, ok.reason);
  CHECK(ok.values[0] == doctest::Approx(0.125));  // no queueing: one prefill
  // At 10/s the queue grows by 2 sessions/s > 0.05 x 10: diverged although the SLO is loose.
  auto bad = exp::judge_run(run_at(10), loose, 10, 0.2 * span10, span10, 0.05);
  CHECK_FALSE(bad.pass);
  CHECK(bad.reason == "diverged (queue grows)");
}

TEST_CASE("replicas, GPUs and cost follow from the capacity") {
  auto z = exp::size_fleet(50, 7.875, 2, 2.0, 100);
  CHECK(z.feasible);
  CHECK(z.replicas == 7);  // ceil(6.35)
  CHECK(z.gpus == 14);
  CHECK(z.cost_per_hour == 28.0);
  // 50 sessions/s x 3600 s x 100 tokens = 18 M tokens per hour.
  CHECK(z.cost_per_million_output_tokens == doctest::Approx(28.0 / 18.0));
  CHECK(exp::size_fleet(20, 5, 1, 3, 1).replicas == 4);  // exact: no spare replica
  CHECK_FALSE(exp::size_fleet(20, 0, 1, 3, 1).feasible);
}

TEST_CASE("ranking puts the cheapest first and names the saving between policies") {
  exp::PlanSpec spec;
  spec.peak_rate = 54;
  spec.seeds = {1};
  spec.slos = {{"ttft_s.p99", 4, "p99", 2.0}};
  spec.deployments = {{"h100", "H100", "/p/h100.analytic.yaml", "analytic", 1, 3.0, {}},
                      {"a100", "A100", "/p/a100.yaml", "measured", 1, 1.5, {}}};
  for (auto [d, pol] : std::vector<std::pair<size_t, std::string>>{
           {0, "discard"}, {0, "preserve"}, {0, "min-waste"}, {1, "discard"}}) {
    exp::Candidate c;
    c.deployment = d;
    c.policy = pol;
    spec.candidates.push_back(c);
  }
  exp::PlanResult r;
  r.spec = &spec;
  r.output_tokens_per_session = 100;
  const std::vector<double> caps = {6, 0, 9, 2};
  for (size_t i = 0; i < caps.size(); ++i) {
    exp::CandidateResult c;
    c.candidate = &spec.candidates[i];
    exp::SearchResult sr;
    sr.capacity = caps[i];
    sr.failed_at = caps[i] + 1;
    c.seeds = {sr};
    c.capacity = c.capacity_mean = c.capacity_max = caps[i];
    c.limited_by = "ttft_s.p99 3 > 2";
    c.slo_values = {1.0};
    c.extrapolations = i == 3 ? 5 : 0;
    const auto& d = spec.deployments[spec.candidates[i].deployment];
    c.sizing = exp::size_fleet(54, caps[i], d.tp, d.price_per_gpu_hour, 100);
    c.router = &spec.routers.front();
    c.guess = c.sizing.replicas;
    if (c.guess > 0)  // the guess passed and one fewer failed
      c.fleet.checks = {{c.guess, verdict(true)}, {c.guess - 1, verdict(false)}};
    c.fleet.sized = c.guess;
    r.ranked.push_back(c);
  }
  exp::rank_plan(r);
  // min-waste: 6 x $3 = $18; discard on H100: 9 x $3 = $27; discard on A100: 27 x $1.5.
  REQUIRE(r.ranked.size() == 4);
  CHECK(r.ranked[0].candidate->policy == "min-waste");
  CHECK(r.ranked[1].candidate->policy == "discard");
  CHECK(r.ranked[1].candidate->deployment == 0);
  CHECK(r.ranked[2].candidate->deployment == 1);
  CHECK(r.ranked[3].candidate->policy == "preserve");  // infeasible last
  REQUIRE(r.savings.size() == 1);
  CHECK(r.savings[0] ==
        "h100: min-waste needs 6 H100 GPUs where discard needs 9, preserve cannot meet the SLOs "
        "($18.00/h instead of $27.00/h: 33% less)");
  auto has = [&](const std::string& s) {
    for (const auto& w : r.warnings)
      if (w.find(s) != std::string::npos) return true;
    return false;
  };
  CHECK(has("h100: h100.analytic.yaml is an analytic (roofline) profile"));
  CHECK(has("a100/discard: profile extrapolated beyond its grid 5 times"));
  CHECK(has("h100/preserve: infeasible"));
  CHECK_FALSE(has("a100: a100.yaml"));  // measured: no warning
  const std::string csv = r.csv();
  CHECK(csv.find("rank,deployment,gpu,profile,profile_source,tp,price_per_gpu_hour,policy,router,"
                 "capacity_rps,capacity_mean_rps,capacity_max_rps,capacity_seed_1,peak_rate,"
                 "replicas_guess,replicas,fleet_simulated,fleet_limited_by,gpus,cost_per_hour,") ==
        0);
  CHECK(csv.find("\n1,h100,H100,h100.analytic.yaml,analytic,1,3,min-waste,session-affinity,9,9,9,"
                 "9,54,6,6,6:pass 5:fail,5: synthetic,6,18,100,") != std::string::npos);
}

TEST_CASE("a replayed trace needs arrivals at different times") {
  auto d = test::scratch("replay");
  trace::Trace t;
  for (int i = 0; i < 3; ++i) {
    trace::Session s;
    s.id = fmt::format("s{}", i);
    s.arrival_s = 5;
    s.segments = {test::seg(10, 2)};
    t.push_back(s);
  }
  {
    std::ofstream f(d / "same.jsonl");
    trace::write_jsonl(f, t);
  }
  std::string spec = hand_plan(d);
  std::string err;
  CHECK(run_isim("plan " + spec + " --no-plot -p trace.path=same.jsonl --out " + (d / "o").string(),
                 nullptr, &err) == 2);
  CHECK(err.find("replay needs sessions that arrive at different times") != std::string::npos);
}

TEST_CASE("a plan on a linear profile gives the hand-computed capacity, replicas and cost") {
  auto d = test::scratch("hand");
  const std::string spec = hand_plan(d);
  auto p = exp::load_plan(spec, {});
  REQUIRE(p.candidates.size() == 2);
  auto r = exp::run_plan(p, exp::PlanOptions{});
  REQUIRE(r.ranked.size() == 2);
  CHECK(r.output_tokens_per_session == 1);
  for (const auto& c : r.ranked) {
    CAPTURE(c.candidate->policy);
    // 8 sessions/s is the service rate. From 3: 3 and 6 pass, 12 and 9 fail, 7.5 passes,
    // 8.25 fails, 7.875 passes; 8.25 - 7.875 <= 5% of 7.875 ends the search.
    for (const auto& s : c.seeds) {
      CHECK(rates(s) == std::vector<double>{3, 6, 12, 9, 7.5, 8.25, 7.875});
      CHECK(s.capacity == 7.875);
    }
    CHECK(c.capacity == 7.875);
    CHECK(c.capacity_max == 7.875);  // replay: every seed sees the same arrivals
    CHECK(c.slo_values[0] == doctest::Approx(0.125));
    CHECK(c.limited_by.rfind("ttft_s.p99 ", 0) == 0);
    CHECK(c.guess == 7);            // ceil(50 / 7.875)
    CHECK(c.sizing.replicas == 7);  // simulated: 7 pass, 6 fail (test_plan_fleet.cpp)
    CHECK(c.sizing.gpus == 7);
    CHECK(c.sizing.cost_per_hour == 14.0);
    // 50 sessions/s x 3600 s x 1 token = 0.18 M tokens per hour.
    CHECK(c.sizing.cost_per_million_output_tokens == doctest::Approx(14.0 / 0.18));
  }
  CHECK(r.savings.empty());  // both policies cost the same
  CHECK(r.warnings.empty());

  SUBCASE("with a loose SLO, the divergence rule alone bounds the capacity") {
    auto loose = exp::load_plan(hand_plan(d, "{ttft_s.p99: 1000}"), {});
    auto lr = exp::run_plan(loose, exp::PlanOptions{});
    for (const auto& c : lr.ranked) {
      CHECK(c.capacity >= 7.875);
      CHECK(c.capacity < 8 / 0.95);  // the queue grows by more than 5% of the rate beyond it
      CHECK(c.limited_by.rfind("diverged", 0) == 0);
    }
  }
}

TEST_CASE("a run still busy at the drain deadline is cut and counts as diverged") {
  // The queue-trend rule is switched off (divergence 100) and the SLO is loose: only the cut can
  // fail a rate. Above 8 sessions/s the server is busy until 400 x 0.125 s = 50 s, past the
  // deadline of the last arrival (399 / rate s) + drain_s = 1 s; at or below it every session
  // ends 0.125 s after it arrives.
  auto d = test::scratch("cut");
  auto p = exp::load_plan(hand_plan(d, "{ttft_s.p99: 1000}"),
                          {"search.drain_s=1", "search.divergence=100", "seeds=[1]"});
  auto r = exp::run_plan(p, exp::PlanOptions{});
  for (const auto& c : r.ranked) {
    CAPTURE(c.candidate->policy);
    CHECK(rates(c.seeds[0]) == std::vector<double>{3, 6, 12, 9, 7.5, 8.25, 7.875});
    CHECK(c.capacity == 7.875);
    CHECK(c.limited_by == "diverged (still busy at 49 s)");  // 399 / 8.25 + 1 = 49.4
    // The fleet at 50/s has the deadline 399 / 50 + 1 = 8.98 s. Round-robin gives replica 0 of
    // 6 the sessions 0, 6, ..., 396: 67 prefills back to back (they arrive 120 ms apart), done
    // at 67 x 0.125 = 8.375 s, and replica 3 at 0.06 + 8.375 s: in time. Of 5, replica 0 has
    // 80 sessions: busy until 10 s, so the run is cut.
    CHECK(c.fleet.simulated() == "7:pass 6:pass 5:fail");
    CHECK(c.sizing.replicas == 6);
    CHECK(c.fleet.limited_by() == "5: seed 1: diverged (still busy at 9 s)");
  }
}

TEST_CASE("isim plan writes the ranked table and plan.csv, identical for any --jobs" *
          doctest::test_suite("threads")) {
  auto d = test::scratch("cli");
  const std::string spec = hand_plan(d, "{ttft_s.p99: 0.2}", "", "[round-robin, session-affinity]");
  std::string out, err;
  REQUIRE(run_isim("plan " + spec + " --no-plot --jobs 1 --out " + (d / "j1").string(), &out,
                   &err) == 0);
  CHECK(out.find("plan hand: peak 50 sessions/s") != std::string::npos);
  CHECK(out.find("discard") != std::string::npos);
  CHECK(out.find(" round-robin ") != std::string::npos);
  CHECK(out.find(" 7.88 ") != std::string::npos);           // capacity per replica
  CHECK(out.find(" 7:pass 6:fail ") != std::string::npos);  // the simulated sizes
  CHECK(out.find(" 14.00 ") != std::string::npos);          // $/hour
  CHECK(err.find("4/4] searches, [4/4] fleets") != std::string::npos);
  REQUIRE(run_isim("plan " + spec + " --no-plot --jobs 2 --out " + (d / "j2").string()) == 0);
  const std::string csv = test::slurp(d / "j1" / "plan.csv");
  CHECK(csv == test::slurp(d / "j2" / "plan.csv"));
  // Round-robin puts session i on replica i mod 6 of 6: the sessions arrive 120 ms apart there
  // and each takes 125 ms, so session i's TTFT is 125 + 5 floor(i / 6) ms. The measured
  // sessions, i in [80, 399] (arrivals in [0.2 x 7.98 s, 7.98 s]), are 320; the nearest-rank
  // p99 is the 317th, i = 396: 125 + 5 x 66 = 455 ms.
  CHECK(csv.find("\n1,test,test-gpu,round.yaml,published,1,2,discard,round-robin,7.875,7.875,"
                 "7.875,7.875,7.875,50,7,7,7:pass 6:fail,6: seed 1: ttft_s.p99 0.455 > 0.2,7,14,"
                 "1,77.7778,0,") != std::string::npos);
}

TEST_CASE("isim plan draws the cost and headroom plots when python3 has matplotlib" *
          doctest::skip(isim::test::absent(exp::find_plot_python().empty()))) {
  auto d = test::scratch("plot");
  const std::string spec = hand_plan(d);
  std::string out;
  REQUIRE(run_isim("plan " + spec + " -p 'seeds=[1]' --jobs 2 --out " + d.string(), &out) == 0);
  CHECK(fs::file_size(d / "cost_capacity.png") > 1000);
  CHECK(fs::file_size(d / "slo_headroom.png") > 1000);
  CHECK(out.find("plot: ") != std::string::npos);
}

TEST_CASE("isim list names the SLO metrics a plan may bound") {
  std::string out;
  REQUIRE(run_isim("list", &out) == 0);
  for (const auto& m : exp::slo_metrics())
    CHECK(out.find("  " + m.name + " ") != std::string::npos);
}
