// isim headroom through the binary: searches whose every probe is known by hand (one session
// that always or never meets its SLO), byte-identical outputs whatever --jobs, the default
// output folder, the plot, and the exact message of each refusal (no folder left behind).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/sweep/sweep.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/plot_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

// One session: a 20-token prompt, 2 output tokens. On the linear test profile (T(x) = 2 ms +
// 0.5 ms x x) its prefill takes 2 + 0.5 x 20 = 12 ms, so its TTFT is 0.012 s whatever the
// arrival rate: alone, nothing queues before it.
const char* kOneSession = R"({"id":"a","arrival_s":0,"segments":[{"input":20,"output":2}]})"
                          "\n";

// A headroom spec in `d` over the one-session trace with `arrival` and `slo` (YAML flow maps).
std::string headroom_spec(const fs::path& d, const std::string& arrival, const std::string& slo,
                          const std::string& policies = "[preserve]",
                          const std::string& file = "h.yaml") {
  const std::string trace = test::write_file(d / "one.jsonl", kOneSession);
  return test::write_file(d / file, "name: h\nseed: 1\ntrace: {from: jsonl, path: " + trace +
                                        "}\narrival: " + arrival +
                                        "\nprofile: " + test::data_dir() +
                                        "/profile-linear-small.yaml\n"
                                        "engine: {activation_reserve_gib: 0}\npolicies: " +
                                        policies + "\n" + slo);
}

nlohmann::json read_json(const fs::path& p) {
  return nlohmann::json::parse(test::slurp(p));
}

int headroom(const std::string& args, std::string* out = nullptr, std::string* err = nullptr) {
  return test::run_bin("isim", "headroom " + args, out, err);
}

}  // namespace

TEST_CASE("isim headroom: a load that always passes is bracketed by every doubling") {
  const auto d = test::scratch("headroom-up");
  // TTFT 0.012 s <= 1 s at every rate: from 1, probes 1, 2, 4, ..., 1024 (10 doublings) all
  // pass; the answer is the last, 1024, a lower bound (bracket above-all), on both seeds.
  const std::string spec =
      headroom_spec(d, "{process: poisson, rate: 1}", "slo: {ttft_s: 1}\n", "[preserve, discard]");
  std::string out, err;
  REQUIRE(headroom(spec + " --seeds 2 --jobs 1 --no-plot --out " + (d / "a").string(), &out,
                   &err) == 0);
  const nlohmann::json j = read_json(d / "a" / "headroom.json");
  CHECK(j["knob"] == "arrival.rate");
  CHECK(j["seeds"] == nlohmann::json::array({1, 2}));
  CHECK(j["slo"]["ttft_s"] == 1.0);
  REQUIRE(j["policies"].size() == 2);
  CHECK(j["policies"][0]["policy"] == "preserve");
  CHECK(j["policies"][1]["policy"] == "discard");
  for (const auto& p : j["policies"]) {
    CHECK(p["mean"] == 1024.0);
    CHECK(p["worst"] == 1024.0);
    CHECK(p["limit"] == "none");
    CHECK(p["runs"] == 22);  // 11 probes x 2 seeds
    for (const auto& s : p["seeds"]) {
      CHECK(s["bracket"] == "above-all");
      CHECK(s["pass"] == 1024.0);
      CHECK(s["fail"].is_null());
      double want = 1;
      for (const auto& probe : s["probes"]) {
        CHECK(probe["rate"] == want);
        CHECK(probe["attainment"] == 1.0);
        CHECK(probe["pass"] == true);
        want *= 2;
      }
    }
  }
  CHECK(out.find("preserve      1024      1024  1024+ 1024+           -    22  - (passed every "
                 "probe)") != std::string::npos);
  // Same inputs, same bytes, whatever the number of threads.
  REQUIRE(headroom(spec + " --seeds 2 --jobs 2 --no-plot --out " + (d / "b").string()) == 0);
  CHECK(test::slurp(d / "a" / "headroom.json") == test::slurp(d / "b" / "headroom.json"));
  CHECK(test::slurp(d / "a" / "headroom.csv") == test::slurp(d / "b" / "headroom.csv"));
  CHECK_FALSE(fs::exists(d / "a" / "headroom.png"));  // --no-plot
}

TEST_CASE("isim headroom: a load that never passes is halved ten times; the limit is TTFT") {
  const auto d = test::scratch("headroom-down");
  // TTFT 0.012 s > 0.01 s at every rate: from 1, probes 1, 1/2, ..., 1/1024 all fail; the
  // answer is 0 (bracket below-all) and the first failing probe above it, 1/1024, misses on
  // TTFT alone (one session: no KV pressure, no queue), so the limit is ttft.
  const std::string spec = headroom_spec(d, "{process: poisson, rate: 1}", "slo: {ttft_s: 0.01}\n");
  std::string out;
  REQUIRE(headroom(spec + " --seeds 1 --no-plot --out " + (d / "o").string(), &out) == 0);
  const nlohmann::json j = read_json(d / "o" / "headroom.json");
  const auto& p = j["policies"][0];
  CHECK(p["mean"] == 0.0);
  CHECK(p["limit"] == "ttft");
  CHECK(p["seeds"][0]["bracket"] == "below-all");
  CHECK(p["seeds"][0]["pass"].is_null());
  CHECK(p["seeds"][0]["fail"] == 1.0 / 1024);
  REQUIRE(p["seeds"][0]["probes"].size() == 11);
  CHECK(p["seeds"][0]["probes"][10]["ttft_miss"] == 1.0);
  CHECK(p["seeds"][0]["probes"][10]["attainment"] == 0.0);
  CHECK(out.find("TTFT (100% over)") != std::string::npos);
  CHECK(out.find("<0.0009765625") != std::string::npos);
}

TEST_CASE("isim headroom: a closed loop searches arrival.users, halving to 1") {
  const auto d = test::scratch("headroom-users");
  // users from 4, never passing: probes 4, floor(4/2) = 2, 1; the CSV's load column is users.
  const std::string spec =
      headroom_spec(d, "{process: users, users: 4, sessions_per_user: 1}", "slo: {ttft_s: 0.01}\n");
  REQUIRE(headroom(spec + " --seeds 1 --no-plot --out " + (d / "o").string()) == 0);
  const nlohmann::json j = read_json(d / "o" / "headroom.json");
  CHECK(j["knob"] == "arrival.users");
  CHECK(j["unit"] == "users");
  CHECK(j["start"] == 4.0);
  const std::string csv = test::slurp(d / "o" / "headroom.csv");
  CHECK(csv.starts_with("policy,seed,probe,users,attainment,"));
  CHECK(csv.find("\npreserve,1,0,4,0,,0,ttft,") != std::string::npos);
  CHECK(csv.find("\npreserve,1,1,2,0,,0,ttft,") != std::string::npos);
  CHECK(csv.find("\npreserve,1,2,1,0,,0,ttft,") != std::string::npos);
}

TEST_CASE("isim headroom: results/NAME-headroom by default, with the plot" *
          doctest::skip(isim::test::absent(test::plot_python().empty()))) {
  const auto d = test::scratch("headroom-default");
  const std::string spec =
      headroom_spec(d, "{process: poisson, rate: 1}", "slo: {ttft_s: 1}\n", "[preserve, discard]");
  std::string out, err;
  REQUIRE(test::run_shell("cd " + d.string() + " && " + test::bin_dir() + "/isim headroom " + spec +
                              " --seeds 1 --tolerance 0.5",
                          &out, &err) == 0);
  CHECK(fs::exists(d / "results" / "h-headroom" / "headroom.json"));
  CHECK(fs::exists(d / "results" / "h-headroom" / "headroom.csv"));
  CHECK(fs::exists(d / "results" / "h-headroom" / "headroom.png"));
  CHECK(out.find("plot: results/h-headroom/headroom.png") != std::string::npos);
}

TEST_CASE("isim headroom: --help, and each refusal names the flag or key, leaving no folder") {
  const auto d = test::scratch("headroom-bad");
  std::string out, err;
  for (const char* flag : {"--help", "-h"}) {  // as test_cli_help.cpp checks every other verb
    REQUIRE(headroom(flag, &out, &err) == 0);
    CHECK(out.starts_with("usage: isim headroom SPEC.yaml"));
    CHECK(out.find("\noptions:\n") != std::string::npos);
    CHECK(out.find("\nexamples:\n  ") != std::string::npos);
    CHECK(out.find("--tolerance") != std::string::npos);
    CHECK(err.empty());
  }
  CHECK(headroom("--no-such-option", &out, &err) == 2);
  CHECK(out.empty());
  CHECK(err ==
        "isim headroom: unrecognised option '--no-such-option'\n(see isim headroom --help)\n");
  const std::string spec = headroom_spec(d, "{process: poisson, rate: 1}", "slo: {ttft_s: 1}\n");
  const std::string o = " --out " + (d / "o").string();
  auto refused = [&](const std::string& args) {
    err.clear();
    const int rc = headroom(args + o, nullptr, &err);
    CHECK_FALSE(fs::exists(d / "o"));
    return rc == 2 ? err : "(exit " + std::to_string(rc) + ")";
  };
  CHECK(refused(spec + " --target 1.5") == "isim: error: --target: must be <= 1, got '1.5'\n");
  CHECK(refused(spec + " --target 0") == "isim: error: --target: must be > 0, got '0'\n");
  CHECK(refused(spec + " --target x") ==
        "isim: error: --target: expected a share in (0, 1], got 'x'\n");
  CHECK(refused(spec + " --tolerance 0.6") ==
        "isim: error: --tolerance: must be <= 0.5, got '0.6'\n");
  CHECK(refused(spec + " --tolerance 0.0005") ==
        "isim: error: --tolerance: must be >= 0.001, got '0.0005'\n");
  CHECK(refused(spec + " --duration -1") == "isim: error: --duration: must be >= 0, got '-1'\n");
  CHECK(refused(spec + " --seeds 0") == "isim: error: --seeds: must be >= 1, got '0'\n");
  CHECK(refused(spec + " --seeds 101") ==
        "isim: error: --seeds: must be <= 100 (each seed is a whole search), got '101'\n");
  CHECK(refused(spec + " --seeds 2.5") == "isim: error: --seeds: expected an integer, got '2.5'\n");
  CHECK(refused(spec + " --jobs 0") ==
        "isim: error: --jobs: expected an integer in 1..1024 (worker threads), got '0'\n");
  CHECK(refused("--seeds 2").starts_with("isim headroom: needs SPEC.yaml\nusage: isim headroom "));
  // A spec without slo:, and one whose arrivals the search cannot vary.
  const std::string no_slo =
      headroom_spec(d, "{process: poisson, rate: 1}", "", "[preserve]", "no-slo.yaml");
  CHECK(refused(no_slo) == "isim: error: " + no_slo +
                               ": slo: headroom needs the spec's SLO, the per-session (or turn) "
                               "limits a load must meet; add e.g. `slo: {ttft_s: 2, tpot_s: "
                               "0.05}` (docs/headroom.md)\n");
  const std::string replay =
      headroom_spec(d, "{process: replay}", "slo: {ttft_s: 1}\n", "[preserve]", "replay.yaml");
  CHECK(refused(replay) == "isim: error: " + replay +
                               ": arrival.process: headroom varies arrival.rate (poisson) or "
                               "arrival.users (users), got replay; run it with -p "
                               "arrival.process=poisson -p arrival.rate=R\n");
  // The same policy twice (isim run would run both into one folder).
  CHECK(refused(spec + " -p 'policies=[preserve, preserve]'") ==
        "isim: error: " + spec +
            ": policies[1]: preserve is listed twice; headroom answers once per policy\n");
  // The trace and profiles are read before any search: a missing trace is refused first.
  const std::string missing = (d / "missing.jsonl").string();
  CHECK(refused(spec + " -p trace.path=" + missing).find(missing) != std::string::npos);
  // A spec key set wrong with -p is the spec reader's refusal, as for isim run.
  CHECK(refused(spec + " -p arrival.rate=-1").find("arrival.rate: must be > 0") !=
        std::string::npos);
}

TEST_CASE("isim headroom --duration: ceil(rate x S) sessions per probe, poisson only") {
  const auto d = test::scratch("headroom-duration");
  // From rate 1 with --duration 10, a probe at rate r draws ceil(r x 10) sessions from the
  // one-session trace (with replacement). Rates 1, 2, ..., 64 pass (10 .. 640 sessions); at
  // some higher rate the prefills (12 ms each alone) no longer keep up, and the bisection
  // between the last pass and the first failure probes rates of the form k / 2^m, whose
  // ceil(r x 10) is again a whole number of sessions.
  const std::string spec = headroom_spec(d, "{process: poisson, rate: 1}", "slo: {ttft_s: 1}\n");
  REQUIRE(headroom(spec + " --seeds 1 --duration 10 --no-plot --out " + (d / "o").string()) == 0);
  const nlohmann::json j = read_json(d / "o" / "headroom.json");
  CHECK(j["duration_s"] == 10.0);
  const auto& probes = j["policies"][0]["seeds"][0]["probes"];
  REQUIRE(probes.size() > 7);
  int64_t want = 10;
  for (size_t k = 0; k < 7; ++k, want *= 2) CHECK(probes[k]["sessions"] == want);
  for (const auto& probe : probes)
    CHECK(probe["sessions"] == static_cast<int64_t>(std::ceil(probe["rate"].get<double>() * 10)));
  // Refusals, before any folder: a closed loop, and a probe past the sessions a run holds
  // (200 sessions/s x 86400 s = 17,280,000 > 10,000,000).
  std::string err;
  const std::string users =
      headroom_spec(d, "{process: users, users: 2}", "slo: {ttft_s: 1}\n", "[preserve]", "u.yaml");
  CHECK(headroom(users + " --duration 10 --out " + (d / "u").string(), nullptr, &err) == 2);
  CHECK(err ==
        "isim: error: --duration: sets how long a poisson probe's arrivals last; a closed "
        "loop (" +
            users + ": arrival.process users) runs users x sessions_per_user sessions\n");
  CHECK(headroom(spec + " -p arrival.rate=200 --duration 86400 --out " + (d / "u").string(),
                 nullptr, &err) == 2);
  CHECK(err ==
        "isim: error: --duration: a probe at 200 sessions/s over 86400 s runs 17280000 "
        "sessions, more than the 10000000 a run holds; lower --duration\n");
  CHECK(headroom(spec + " --duration 90000 --out " + (d / "u").string(), nullptr, &err) == 2);
  CHECK(err == "isim: error: --duration: must be <= 86400 (a day of arrivals), got '90000'\n");
  CHECK_FALSE(fs::exists(d / "u"));
}

TEST_CASE("plot_headroom.py: a hand-made headroom.json, its legend and fonts; bad input exits 2" *
          doctest::skip(isim::test::absent(test::plot_python().empty()))) {
  const auto d = test::scratch("headroom-plot");
  // Two policies; preserve's seed passes at 2 and 3, fails at 4; swap's only probe fails.
  const auto probe = [](double rate, double share, bool pass) {
    return nlohmann::json{
        {"rate", rate}, {"attainment", share}, {"turn_attainment", nullptr}, {"pass", pass}};
  };
  nlohmann::json doc = {
      {"knob", "arrival.rate"},
      {"unit", "sessions/s"},
      {"target", 0.9},
      {"duration_s", 0},
      {"policies",
       {{{"policy", "preserve"},
         {"mean", 3.0},
         {"worst", 3.0},
         {"limit", "memory"},
         {"seeds",
          {{{"probes", {probe(2, 1, true), probe(4, 0.5, false), probe(3, 0.95, true)}}}}}},
        {{"policy", "swap"},
         {"mean", 0.0},
         {"worst", 0.0},
         {"limit", "tpot"},
         {"seeds", {{{"probes", {probe(2, 0.4, false)}}}}}}}}};
  test::write_file(d / "h.json", doc.dump());
  const fs::path rep = d / "report.jsonl";
  std::string err;
  REQUIRE(test::run_plot_script("plot_headroom.py",
                                (d / "h.json").string() + " " + (d / "h.png").string(), nullptr,
                                &err, "ISIM_PLOT_REPORT=" + rep.string() + " ") == 0);
  CHECK(err.empty());
  CHECK(fs::file_size(d / "h.png") > 10000);
  const nlohmann::json r = nlohmann::json::parse(test::slurp(rep));
  CHECK(r["legend"] == nlohmann::json::array({"preserve: 3 (worst seed 3), memory",
                                              "swap: 0 (worst seed 0), tpot", "target 0.9"}));
  CHECK(r["undrawn"].empty());
  CHECK(r["min_font_pt"].get<double>() >= 9);
  // Bad input: exit 2, naming the file and what is wrong; no PNG.
  test::write_file(d / "bad.json", R"({"knob": "arrival.rate", "unit": "sessions/s"})");
  CHECK(test::run_plot_script("plot_headroom.py",
                              (d / "bad.json").string() + " " + (d / "x.png").string(), nullptr,
                              &err) == 2);
  CHECK(err ==
        "plot_headroom.py: error: " + (d / "bad.json").string() + ": missing key 'target'\n");
  CHECK_FALSE(fs::exists(d / "x.png"));
}
