// A candidate's plan results (experiments/plan/plan.h: CandidateResult) as JSON, for the plan shard
// journals (plan_shards.h). Internal to the plan shards.
//
// Contract:
// - candidate_result_json writes every field but the pointers (candidate, router, split,
//   planner: the journal's order restores them), numbers so that they read back exactly, and
//   non-finite ones as "inf", "-inf" or "nan".
// - parse_candidate_result reads it back; a missing field or one of the wrong type is an
//   InputError "FILE:LINE: KEY: expected WHAT".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "experiments/plan/plan.h"

namespace isim::exp {

nlohmann::ordered_json candidate_result_json(const CandidateResult& c);
CandidateResult parse_candidate_result(const nlohmann::ordered_json& j, const std::string& file,
                                       size_t line);

}  // namespace isim::exp
