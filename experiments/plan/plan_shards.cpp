// Sharded, resumable plans: candidate keys, the plan journal and the merge (plan_shards.h).
#include "experiments/plan/plan_shards.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/input_error.h"
#include "experiments/plan/plan_result_json.h"
#include "experiments/sweep/journal_record.h"
#include "experiments/sweep/sweep_shards.h"

namespace isim::exp {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kKind = "isim_plan_shard";

size_t results_per_candidate(const PlanSpec& spec) {
  return spec.routers.size() * spec.layouts.size();
}

// The candidate's results from a record, their pointers restored in run_plan's order.
std::vector<CandidateResult> parse_results(const PlanSpec& spec, size_t c, const Json& rec,
                                           const std::string& file, size_t line) {
  auto it = rec.find("results");
  if (it == rec.end() || !it->is_array() || it->size() != results_per_candidate(spec))
    throw InputError(fmt::format("{}:{}: results: expected a list of {} (routers x layouts)", file,
                                 line, results_per_candidate(spec)));
  std::vector<CandidateResult> out;
  size_t i = 0;
  for (const auto& router : spec.routers)
    for (const auto& l : spec.layouts) {
      CandidateResult r = parse_candidate_result((*it)[i++], file, line);
      r.candidate = &spec.candidates[c];
      r.router = &router;
      r.split = &spec.pd_splits[l.split];
      r.planner = &spec.planners[l.planner];
      out.push_back(std::move(r));
    }
  return out;
}

// The candidate index of a record, checked against its key.
size_t record_candidate(const PlanSpec& spec, const Json& rec, const std::string& file,
                        size_t line) {
  auto c = rec.find("candidate");
  auto k = rec.find("key");
  if (c == rec.end() || !c->is_number_unsigned() || c->get<size_t>() >= spec.candidates.size())
    throw InputError(fmt::format("{}:{}: candidate: expected an index below {}", file, line,
                                 spec.candidates.size()));
  const size_t i = c->get<size_t>();
  if (k == rec.end() || !k->is_string() || k->get<std::string>() != candidate_key(spec, i))
    throw InputError(fmt::format("{}:{}: key: expected '{}' for candidate {}", file, line,
                                 candidate_key(spec, i), i));
  return i;
}

struct PlanHead {
  std::string spec, isim;
  size_t k = 0, n = 0;
};

PlanHead read_plan_head(const Json& h, const std::string& file) {
  PlanHead p;
  auto s = h.find("spec"), is = h.find("isim"), sh = h.find("shard");
  if (s == h.end() || !s->is_string() || is == h.end() || !is->is_string() || sh == h.end() ||
      !sh->is_array() || sh->size() != 2 || !(*sh)[0].is_number_unsigned() ||
      !(*sh)[1].is_number_unsigned())
    throw InputError(file + ":1: expected a plan journal header with spec, isim and shard [K, N]");
  p.spec = s->get<std::string>();
  p.isim = is->get<std::string>();
  p.k = (*sh)[0].get<size_t>();
  p.n = (*sh)[1].get<size_t>();
  if (p.k < 1 || p.k > p.n) throw InputError(file + ":1: shard: expected [K, N] with 1 <= K <= N");
  return p;
}

}  // namespace

std::string candidate_key(const PlanSpec& spec, size_t c) {
  const Candidate& cand = spec.candidates[c];
  return fmt::format("deployment={} policy={}", spec.deployments[cand.deployment].name,
                     cand.policy);
}

bool plan_shard_contains(const PlanSpec& spec, size_t c, const Shard& shard) {
  return shard_hash(candidate_key(spec, c)) % shard.n == shard.k - 1;
}

std::string plan_fingerprint(const PlanSpec& spec, const std::string& spec_yaml) {
  std::string text = isim_identity() + "\n" + spec_yaml + "\n";
  for (size_t c = 0; c < spec.candidates.size(); ++c)
    text += candidate_key(spec, c) + '\x1f' + YAML::Dump(spec.candidates[c].experiment.resolved()) +
            '\n';
  return fmt::format("{:016x}", fnv1a64(text));
}

std::string plan_record_line(const PlanSpec& spec, size_t c,
                             const std::vector<CandidateResult>& results) {
  Json j;
  j["candidate"] = c;
  j["key"] = candidate_key(spec, c);
  const Deployment& d = spec.deployments[spec.candidates[c].deployment];
  if (d.parallel())  // the unit of its results' replicas and GPUs
    j["layout"] = {{"dp", d.par.dp},
                   {"ep", d.par.ep},
                   {"tp", d.tp},
                   {"gpus_per_group", d.gpus_per_group()},
                   {"group", group_layout(d)}};
  j["results"] = Json::array();
  for (const auto& r : results) j["results"].push_back(candidate_result_json(r));
  return j.dump() + "\n";
}

PlanJournal open_plan_journal(const std::string& out_dir, const PlanSpec& spec,
                              const std::string& spec_yaml, const Shard& shard, bool resume) {
  PlanJournal j;
  j.path =
      (fs::path(out_dir) / "shards" / fmt::format("plan-shard-{}-of-{}.jsonl", shard.k, shard.n))
          .string();
  j.spec_fingerprint = plan_fingerprint(spec, spec_yaml);
  Json h;
  h[kKind] = 1;
  h["isim"] = isim_identity();
  h["spec"] = j.spec_fingerprint;
  h["candidates"] = spec.candidates.size();
  h["shard"] = {shard.k, shard.n};
  std::string text = h.dump() + "\n";
  fs::create_directories(fs::path(j.path).parent_path());
  if (fs::exists(j.path)) {
    const JournalText jt = split_journal(read_journal_text(j.path), j.path, kKind);
    check_header_identity(jt.header, j.path);
    const bool same = read_plan_head(jt.header, j.path).spec == j.spec_fingerprint;
    j.torn = jt.torn;
    for (const auto& [line, rec] : jt.records) {
      if (!resume || !same) {
        ++j.dropped;
        continue;
      }
      const size_t c = record_candidate(spec, rec, j.path, line);
      if (!plan_shard_contains(spec, c, shard) || j.kept.count(c)) {
        ++j.dropped;
        continue;
      }
      j.kept.emplace(c, parse_results(spec, c, rec, j.path, line));
    }
  }
  for (const auto& [c, rs] : j.kept) text += plan_record_line(spec, c, rs);
  write_file_atomic(j.path, text);
  return j;
}

PlanResult merge_plan(const PlanSpec& spec, const std::string& spec_yaml,
                      const std::vector<std::string>& paths) {
  const std::string fp = plan_fingerprint(spec, spec_yaml);
  std::map<size_t, std::vector<CandidateResult>> results;
  std::map<size_t, std::string> shard_file, cand_at;
  size_t n = 0;
  for (const auto& p : journal_paths(paths, "plan-shard-")) {
    const JournalText jt = split_journal(read_journal_text(p), p, kKind);
    check_header_identity(jt.header, p);
    const PlanHead h = read_plan_head(jt.header, p);
    if (h.spec != fp)
      throw InputError(
          fmt::format("{}:1: spec fingerprint {} differs from the plan's {}: the "
                      "journal comes from another spec or other -p overrides",
                      p, h.spec, fp));
    if (n == 0) n = h.n;
    if (h.n != n)
      throw InputError(fmt::format("{}:1: shard count {} differs from {}'s {}", p, h.n,
                                   shard_file.begin()->second, n));
    if (auto [it, fresh] = shard_file.emplace(h.k, p); !fresh)
      throw InputError(fmt::format("{}: shard {}/{} is also {}", p, h.k, h.n, it->second));
    if (jt.torn)
      throw InputError(
          fmt::format("{}: its last line is cut short: shard {}/{} was interrupted; "
                      "rerun it with --resume to finish it, then merge",
                      p, h.k, h.n));
    for (const auto& [line, rec] : jt.records) {
      const size_t c = record_candidate(spec, rec, p, line);
      const std::string at = fmt::format("{}:{}", p, line);
      if (auto [it, fresh] = cand_at.emplace(c, at); !fresh)
        throw InputError(fmt::format("{}: candidate '{}' is also at {}", at, candidate_key(spec, c),
                                     it->second));
      results.emplace(c, parse_results(spec, c, rec, p, line));
    }
  }
  for (size_t k = 1; k <= n; ++k)
    if (!shard_file.count(k))
      throw InputError(
          fmt::format("plan merge: shard {}/{} missing: no journal given for it "
                      "(plan-shard-{}-of-{}.jsonl)",
                      k, n, k, n));
  for (size_t c = 0; c < spec.candidates.size(); ++c)
    if (!results.count(c))
      throw InputError(
          fmt::format("plan merge: candidate '{}' missing: a shard has not "
                      "finished; rerun it with --resume, then merge",
                      candidate_key(spec, c)));
  return assemble_plan(spec, results);
}

}  // namespace isim::exp
