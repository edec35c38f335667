// Sharded, resumable plans (`isim plan --shard`, `isim plan merge`).
//
// Contract:
// - The unit of a shard is a candidate (one deployment with one policy): its capacity search
//   for every seed and its fleet search for every router and fleet layout, since the fleet
//   search starts from the lowest capacity over the seeds. Candidate c is in shard K of N when
//   FNV-1a 64 (sweep_shards.h) of its key "deployment=NAME policy=LABEL" is K - 1 modulo N.
// - The plan fingerprint covers the isim build, the spec as loaded (overrides applied) and
//   every candidate's resolved experiment (absolute profile paths).
// - The journal of shard K/N is OUT/shards/plan-shard-K-of-N.jsonl: a header
//   {"isim_plan_shard":1,"isim":...,"spec":FP,"candidates":C,"shard":[K,N]}, then one line per
//   finished candidate, in candidate order: {"candidate":I,"key":KEY,"results":[...]} (with
//   "layout":{dp, ep, tp, gpus_per_group, group} after "key" for a DP/EP deployment), its
//   results per router and layout (run_plan's order) with every field, exactly (non-finite
//   numbers as "inf", "-inf", "nan"). Each line is written with one write and an fsync.
// - open_plan_journal: without `resume`, or when the journal's spec fingerprint differs (every
//   candidate's result depends on the whole spec), the journal starts anew and what it held is
//   counted in `dropped`; with `resume`, its records are kept. A torn last line is dropped; a
//   journal of another isim build is an InputError.
// - merge_plan(spec, paths): the journals (files, or folders of plan-shard-*.jsonl) must share
//   one fingerprint equal to `spec`'s, one build and one N, hold every shard once and every
//   candidate once; InputError (exit 2) naming the file and line otherwise. It returns the
//   PlanResult that run_plan gives for `spec` (so plan.csv is byte for byte the same).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "experiments/plan/plan.h"
#include "experiments/sweep/sweep.h"

namespace isim::exp {

std::string candidate_key(const PlanSpec& spec, size_t candidate);
bool plan_shard_contains(const PlanSpec& spec, size_t candidate, const Shard& shard);
// spec_yaml: YAML::Dump of the spec file's root with the -p overrides applied.
std::string plan_fingerprint(const PlanSpec& spec, const std::string& spec_yaml);

struct PlanJournal {
  std::string path, spec_fingerprint;
  std::map<size_t, std::vector<CandidateResult>> kept;  // candidate -> its results
  size_t dropped = 0;
  bool torn = false;
};
PlanJournal open_plan_journal(const std::string& out_dir, const PlanSpec& spec,
                              const std::string& spec_yaml, const Shard& shard, bool resume);
// The journal line of candidate `c`'s results (ends in '\n').
std::string plan_record_line(const PlanSpec& spec, size_t c,
                             const std::vector<CandidateResult>& results);

PlanResult merge_plan(const PlanSpec& spec, const std::string& spec_yaml,
                      const std::vector<std::string>& paths);

// The results of `candidates` (run_plan's CandidateResults, unranked, in candidate order, each
// candidate's routers and layouts in spec order), the runs of each candidate on o.jobs threads.
std::vector<CandidateResult> run_candidates(const PlanSpec& spec, const PlanOptions& o,
                                            const std::vector<size_t>& candidates,
                                            double output_tokens_per_session);
// A PlanResult from every candidate's results (by candidate index), ranked as run_plan ranks.
PlanResult assemble_plan(const PlanSpec& spec,
                         const std::map<size_t, std::vector<CandidateResult>>& results);

}  // namespace isim::exp
