// The closed-loop `users` arrival process end to end through the experiment layer, on the 58
// real Claude Code sessions (../shared/data/weka-claude-code; skipped when absent): 4 users, 2
// sessions each, one Llama-3.1-8B H200 replica (aiconfigurator tables), the global invariant
// checked after every instant. Every session finishes, and the closed loop holds in the run's
// own times: a user's second session arrives the instant its first one ends, and a subagent its
// offset after its parent.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>

#include "experiments/run/run.h"
#include "tests/spec_helpers.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {

const std::string kDir = test::shared_data() + "/weka-claude-code/traces";

std::string spec() {
  return "name: users\nseed: 3\n"
         "trace: {from: weka-claude-code, path: " +
         kDir +
         "}\n"
         "arrival: {process: users, users: 4, sessions_per_user: 2}\n"
         "profile: " +
         test::source_dir() +
         "/calibrate/profiles/h200-llama-3.1-8b.aiconfigurator.yaml\n"
         "engine: {scheduler: vllm-v1, max_num_batched_tokens: 8192, max_num_seqs: 256}\n"
         "policies: [preserve]\n";
}

}  // namespace

TEST_CASE("users on the Claude Code sessions: 4 users x 2 sessions all finish, closed loop" *
          doctest::skip(isim::test::absent(!std::filesystem::exists(kDir)))) {
  const exp::Experiment e = test::parse(spec());
  const exp::Inputs in = exp::prepare(e);
  const trace::Trace& t = in.trace;
  REQUIRE(t.size() >= 8);
  const auto r = exp::run_policy(e, in, e.policies[0], cluster::Checks::global_only());
  REQUIRE(r.sessions.size() == t.size());
  CHECK(r.skipped.empty());
  std::map<std::string, size_t> roots_per_user;
  for (size_t i = 0; i < t.size(); ++i) {
    CAPTURE(t[i].id);
    const auto& s = r.sessions[i];
    CHECK(s.id == t[i].id);
    CHECK(s.status == "finished");
    const trace::StartAfter& a = t[i].start_after;
    if (a.session < 0 || a.on_finish) ++roots_per_user[t[i].id.substr(0, 2)];
    if (a.session < 0) {
      CHECK(s.arrival_s == t[i].arrival_s);
      CHECK(s.arrival_s < 60);  // stagger_s
      continue;
    }
    const auto& p = r.sessions[static_cast<size_t>(a.session)];
    const sim::Nanos want =
        sim::from_seconds(a.on_finish ? p.finish_s : p.arrival_s) + sim::from_seconds(a.delay_s);
    CHECK(sim::from_seconds(s.arrival_s) == want);
    for (const auto& g : t[i].segments)
      if (g.intercept) CHECK(g.intercept->duration_s <= 60);  // max_delay_s
  }
  CHECK(roots_per_user ==
        std::map<std::string, size_t>{{"u0", 2}, {"u1", 2}, {"u2", 2}, {"u3", 2}});
}
