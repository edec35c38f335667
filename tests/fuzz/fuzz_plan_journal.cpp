// Plan shard journals (experiments/plan/plan_shards.h), against a fixed one-deployment plan: the
// input, as the one shard of that plan (plan-shard-1-of-1.jsonl), goes to merge_plan, which reads
// its header and records and checks that every candidate is there once; then to
// open_plan_journal with resume, which keeps its records and rewrites the journal from them.
// Promise checked: the rewritten journal, opened again, keeps the same records, each written
// back to the same line (plan_record_line).
//
// The header names this build and the plan's fingerprint, which differ in every checkout: in the
// input, "@ISIM@" stands for isim_identity() and "@SPEC@" for the fingerprint, so that the seeds
// (corpus/plan_journal/) reach the records instead of stopping at line 1.
#include <map>
#include <string>

#include <yaml-cpp/yaml.h>

#include "experiments/plan/plan.h"
#include "experiments/plan/plan_shards.h"
#include "experiments/sweep/journal_record.h"
#include "tests/fuzz/fuzz.h"

namespace {

// Paths relative to experiments/specs/, as the committed plan specs have them.
const char* kPlan =
    "name: fuzz-plan\n"
    "seeds: [1]\n"
    "trace: {from: generator, path: ../../traces/generators/infercept-mix.yaml}\n"
    "arrival: {process: poisson}\n"
    "peak_rate: 2\n"
    "slo: {ttft_s.p99: 2.0}\n"
    "search: {start_rate: 1, tolerance: 0.5, window_s: 20, warmup: 0.2, drain_s: 10}\n"
    "policies: [discard, preserve]\n"
    "routers: [round-robin]\n"
    "deployments:\n"
    "  h200:\n"
    "    gpu: H200\n"
    "    profile: ../../calibrate/profiles/h200-llama-3.1-8b.analytic.yaml\n"
    "    price_per_gpu_hour: 3.79\n";

struct Plan {
  isim::exp::PlanSpec spec;
  std::string yaml, fingerprint;
};

const Plan& plan() {
  static const Plan p = [] {
    Plan q;
    const YAML::Node root = YAML::Load(kPlan);
    q.spec = isim::exp::parse_plan(root, "fuzz-plan.yaml",
                                   isim::fuzz::source_dir() + "/experiments/specs");
    q.yaml = YAML::Dump(root);
    q.fingerprint = isim::exp::plan_fingerprint(q.spec, q.yaml);
    return q;
  }();
  return p;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const Plan& p = plan();
  std::string text = fuzz::bytes(data, size);
  replace_all(text, "@ISIM@", exp::isim_identity());
  replace_all(text, "@SPEC@", p.fingerprint);
  const fuzz::fs::path merged = fuzz::scratch() / "plan-shard-1-of-1.jsonl";
  fuzz::write_file(merged, text);
  fuzz::accepted([&] { exp::merge_plan(p.spec, p.yaml, {merged.string()}); });

  const fuzz::fs::path out = fuzz::scratch() / "plan-out";
  fuzz::fs::create_directories(out / "shards");
  fuzz::write_file(out / "shards" / "plan-shard-1-of-1.jsonl", text);
  const exp::Shard one{1, 1};
  exp::PlanJournal first;
  if (!fuzz::accepted(
          [&] { first = exp::open_plan_journal(out.string(), p.spec, p.yaml, one, true); }))
    return 0;
  exp::PlanJournal again;
  fuzz::must_accept("reopening the journal open_plan_journal rewrote", [&] {
    again = exp::open_plan_journal(out.string(), p.spec, p.yaml, one, true);
  });
  if (again.kept.size() != first.kept.size() || again.dropped != 0 || again.torn)
    fuzz::broken("the rewritten journal kept other records");
  for (const auto& [c, results] : first.kept) {
    auto it = again.kept.find(c);
    if (it == again.kept.end() ||
        exp::plan_record_line(p.spec, c, it->second) != exp::plan_record_line(p.spec, c, results))
      fuzz::broken("candidate " + std::to_string(c) + " read back differently");
  }
  return 0;
}
