// The cluster's disaggregation state: roles, links, transfers in flight, the queues of KV
// waiting for decode room, planner intervals and their observations. Private to cluster/.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "cluster/disagg.h"
#include "cluster/link.h"
#include "cluster/planner.h"
#include "cluster/run_result.h"

namespace isim::cluster {

// A prefilled session whose KV waits for room on its decode replica.
struct PendingImport {
  int32_t session = 0;
  int32_t src = 0, src_h = 0;
  sim::Nanos prefilled_at = 0;
  sim::Nanos iteration_start = 0;  // of the iteration that finished the prefill
};

struct Transfer {
  int32_t session = 0;
  int32_t src = 0, src_h = 0, dst = 0, dst_h = 0;
  sim::Nanos prefilled_at = 0, started_at = 0;
  double bytes = 0;
  bool paused_move = false;  // a paused session's KV leaving a replica that stopped decoding
};

// Per-replica counters at the last pull, to report what each replica did since.
struct PullMark {
  int64_t prefill_tokens = 0, decode_tokens = 0, iterations = 0;
  sim::Nanos busy = 0;
};

struct DisaggState {
  DisaggConfig cfg;
  Planner* planner = nullptr;
  std::vector<Role> roles;
  std::vector<char> switching;
  std::vector<char> draining;        // drain_first: waiting for its work to end
  std::vector<Role> switch_to;
  LinkSet links;  // two per replica: [2r] intra-node, [2r + 1] inter-node
  std::map<std::pair<int32_t, int64_t>, Transfer> transfers;  // by (link, transfer id)
  std::vector<std::deque<PendingImport>> imports;             // by decode replica
  // Sessions that paused on a replica that no longer decodes, for paused_kv (replica, handle,
  // session), and intercepts that ended while their KV moved (session -> when).
  std::vector<std::array<int32_t, 3>> stray_paused;
  std::map<int32_t, sim::Nanos> resume_on_landing;
  // Planner observations of the current pull interval.
  FleetSnapshot window;
  double ttft_sum = 0, itl_sum = 0, isl_sum = 0, osl_sum = 0;
  std::vector<PullMark> marks;
  sim::Nanos last_pull = 0;
  bool planning = false;
  // Results.
  DisaggStats stats;
  double transfer_s_sum = 0, wait_s_sum = 0;
};

}  // namespace isim::cluster
