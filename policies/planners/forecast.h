// Forecast: the demand a disaggregated fleet will see over the next `horizon_s`, from the
// paused-agent population (FleetSnapshot::paused) and the learned tool waits (ToolWaits), plus
// new sessions at the recent rate; or, as the ablation, from the demand observed now. Nothing
// here reads a session's future: only the snapshot and the rates the planner measured.
//
// Contract (h = horizon_s; P_i = waits.p_return(kind_i, elapsed_i, h) for paused session i;
// ret_i = waits.returned_tokens(kind_i); out_i = waits.next_output(kind_i), or the rates'
// output per turn when the model has none; held_i = its held KV tokens when its replica decodes
// (decode or mixed role), else 0; uncached_i = ret_i + max(0, context_i - held_i)):
// - `forecast`:
//     prefill_tokens   = sum P_i x uncached_i + new input tokens/s x h
//     prefill_requests = sum P_i + new sessions/s x h
//     decode_tokens    = sum P_i x out_i + new sessions/s x h x output per turn
//                        + decoding now x output per turn / 2   (what running turns have left)
//     kv_tokens        = KV in use on decode replicas now + sum P_i x (uncached_i + out_i)
//                        + new input tokens/s x h + new sessions/s x h x output per turn
// - `observed` (forecast: false): prefill_tokens and prefill_requests = the routed rates x h;
//   decode_tokens = (decoding + waiting sessions on decode replicas now) x h / itl_s (each at
//   one token per itl_s); kv_tokens = KV in use on decode replicas now.
// - Both: backlog_tokens = prefill tokens queued on prefill replicas now; decoders = the mean
//   number of sessions decoding at once over the horizon at one token per itl_s each
//   (Little's law): decode_tokens x itl_s / h. "Decoding now" counts decode replicas' decoding
//   sessions; KV in use = sum over decode replicas of kv_utilization x kv_capacity_tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/planner.h"
#include "policies/planners/tool_waits.h"

namespace isim::policy::planners {

// What the planner measured, smoothed (per second unless said).
struct DemandRates {
  double new_sessions = 0;      // arrivals / s
  double new_input_tokens = 0;  // their first turns' input tokens / s
  double routed_requests = 0;   // prefills routed to prefill replicas / s
  double routed_tokens = 0;     // their uncached tokens / s
  double output_per_turn = 0;   // mean output tokens of a finished turn
};

struct Demand {
  double prefill_tokens = 0, prefill_requests = 0, backlog_tokens = 0;
  double decode_tokens = 0, decoders = 0, kv_tokens = 0;
};

Demand forecast(const cluster::FleetSnapshot& s, const std::vector<int64_t>& kv_capacity,
                const ToolWaits& waits, const DemandRates& r, double horizon_s, double itl_s);
Demand observed(const cluster::FleetSnapshot& s, const std::vector<int64_t>& kv_capacity,
                const DemandRates& r, double horizon_s, double itl_s);

}  // namespace isim::policy::planners
