// The MoE layer of a data-parallel group whose cores step together (cluster/lockstep.h): the
// expert load of the busiest rank and the all-to-all that carries tokens to their experts and
// back. Pure functions of the model, the group's shape and the tokens each core runs.
//
// Contract (every time in us, per MoE layer and step):
// - expected_max_std_normal(n): E[max of n independent N(0,1)], by Simpson's rule on
//   [-12, 12] (1/sqrt(pi) for n = 2, 0 for n = 1). Throws std::logic_error for n < 1.
// - rank_load(E, k, R, T, skew, z): the (token, expert) pairs the busiest of R ranks receives
//   when T tokens each pick k distinct experts of E, E/R experts per rank. One token sends a
//   hypergeometric count to a rank: mean k/R, variance k (1/R)(1 - 1/R)(E - k)/(E - 1); over T
//   tokens (independent) mean mu = T k / R and sd = sqrt(T x that variance). The expected maximum
//   is approximated as skew x mu + sd x z (z = expected_max_std_normal(R); the ranks are taken as
//   independent, which they nearly are), clamped to [skew x mu, T min(k, E/R)]. skew >= 1 is the
//   hottest rank's mean load over the mean (1: uniform routing, as with a balanced EPLB).
// - alltoall_us(t, bytes_per_token, R, g, intra, inter): one direction (dispatch or combine) from
//   one rank sending t tokens: t x bytes_per_token x (R - 1)/R bytes, of which the share
//   (g - 1)/R goes to the g - 1 peers inside its NVLink domain (g = min(R, GPUs per node)) and
//   (R - g)/R over the inter-node link; the two run at once, each costing latency + bytes / GB/s.
// - group_moe_layer(model, tables, shape, z, tokens per core): what the group's MoE layer costs.
//   With ep, ranks R = cores x tp hold E/R whole experts each; every rank sends its core's tokens
//   / tp (sequence-parallel inside a core) and the busiest core sets t. Expert compute is the
//   busiest rank's load L = rank_load(E, k, R, sum of tokens, skew, z) over A = n(1 - (1 -
//   1/n)^L) distinct experts of its n = E/R: the profile's moe_us(L/k, A) when measured, else the
//   roofline of A experts' weights read once and L x 2 x 3 hidden x expert_ffn FLOPs; plus the
//   shared expert over the busiest core's tokens split by tp. Communication: dispatch and combine,
//   each alltoall_us(t, hidden x dtype bytes, ...). Without ep, every rank runs every token with
//   each expert split R ways (vLLM's MoE over DP x TP without expert parallelism): expert compute
//   is moe_layer_us at tp = R over all tokens; communication an all-gather and a reduce-scatter of
//   every core's tokens, each (R - 1) x t tokens' bytes per rank. exposed_us = (1 - overlap) x
//   comm_us is what the step waits for.
// - Dummy cores (no work) still send one token (vLLM's dummy batch): the caller passes 1 for them.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/profile.h"

namespace isim::sim {

double expected_max_std_normal(int n);

struct RankLoad {
  double mean = 0, sd = 0, max = 0;
};
RankLoad rank_load(int experts, int per_token, int ranks, double tokens, double skew, double z);

struct LinkFigures {
  double gbps = 0;        // one direction, 1e9 bytes/s
  double latency_us = 0;  // per transfer
  bool operator==(const LinkFigures&) const = default;
};

double alltoall_us(double tokens, double bytes_per_token, int ranks, int ranks_per_domain,
                   const LinkFigures& intra, const LinkFigures& inter);

// A lockstep group as the MoE layer sees it.
struct EpGroupShape {
  int cores = 1;             // engine cores (vLLM data_parallel_size)
  int tp = 1;                // GPUs per core
  bool ep = false;           // experts spread over cores x tp ranks
  int gpus_per_domain = 8;   // GPUs one NVLink domain joins
  double overlap = 0;        // share of dispatch/combine hidden behind compute, [0, 1]
  double skew = 1;           // hottest rank's mean load over the mean, >= 1
  LinkFigures intra, inter;  // NVLink; the inter-node network
  int ranks() const { return cores * tp; }
  bool operator==(const EpGroupShape&) const = default;
};

struct GroupMoe {
  double load = 0;        // pairs on the busiest rank (ep) or tokens every rank runs (no ep)
  double expert_us = 0;   // expert compute, shared expert included
  double comm_us = 0;     // both directions
  double exposed_us = 0;  // (1 - overlap) x comm_us
  double bytes = 0;       // one direction, from the busiest rank
  double us() const { return expert_us + exposed_us; }
};

GroupMoe group_moe_layer(const ModelShape& m, const TablesForward& t, const EpGroupShape& g,
                         double z, const std::vector<int64_t>& core_tokens);

}  // namespace isim::sim
