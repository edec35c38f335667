// What the role planners share: reading and checking their parameters, counting the pools, and
// turning "move k replicas out of this role" into RoleChanges.
//
// Contract:
// - Pools count the replicas of each role in PlannerContext.roles, switching ones included (by
//   the role the context gives them); mixed replicas are never counted or moved.
// - `move_out(c, latest, from, count)` moves up to `count` replicas from role `from` (prefill or
//   decode) to the other role. Candidates are the non-switching replicas of `from`, least work
//   first (from the latest snapshot: queued prefill tokens for prefill, running sessions for
//   decode; 0 when the snapshot lacks the replica), lowest index on ties. At least one
//   non-switching replica always stays in `from`, so no change can leave a role empty whatever a
//   switching replica becomes. Changes come in ascending replica order.
// - `step_toward(c, latest, target_prefill, step)` moves min(step, |target - prefill now|)
//   replicas toward `target_prefill` prefill replicas (through move_out).
// - `split_of(prefill_need, decode_need, n)`: Dynamo's fixed-budget rule, the prefill count
//   floor(n x prefill_need / (prefill_need + decode_need)) clamped to [1, n - 1]; -1 when both
//   needs are 0 or n < 2 (nothing to decide).
// - The readers check a value and name the key in the error: intervals finite and > 0,
//   fractions in [0, 1], non-negative numbers, step an integer >= 1 (default 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/planner.h"
#include "core/params.h"

namespace isim::policy::planners {

struct Pools {
  int32_t prefill = 0;
  int32_t decode = 0;
  int32_t total() const { return prefill + decode; }
};
Pools count_pools(const cluster::PlannerContext& c);
bool any_switching(const cluster::PlannerContext& c);  // among prefill and decode replicas

std::vector<cluster::RoleChange> move_out(const cluster::PlannerContext& c,
                                          const std::vector<cluster::ReplicaMetrics>& latest,
                                          cluster::Role from, int32_t count);
std::vector<cluster::RoleChange> step_toward(const cluster::PlannerContext& c,
                                             const std::vector<cluster::ReplicaMetrics>& latest,
                                             int32_t target_prefill, int32_t step);
int32_t split_of(double prefill_need, double decode_need, int32_t n);

// Bounded reads (core/params.h: each records key, default, bound and help for `isim list`).
// An interval between decisions, in [0.001, 86400] s; a latency target, in (0, 3600] s.
double interval_param(const Params& p, const std::string& key, double def, const char* help);
double seconds_param(const Params& p, const std::string& key, double def, const char* help);
double fraction_param(const Params& p, const std::string& key, double def,
                      const char* help);  // in [0, 1]
// A queue length in requests per replica, in [0, 10^6].
double non_negative_param(const Params& p, const std::string& key, double def, const char* help);
int32_t step_param(const Params& p);  // "step", in [1, 65536], default 1

std::string num(double x);  // shortest text that reads back as x (describe())

}  // namespace isim::policy::planners
