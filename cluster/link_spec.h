// LinkSpec: one kind of interconnect's figures (bandwidth one way, latency per transfer), and
// the public defaults the fleet's links and KV tiers start from.
#pragma once

#include <string>

namespace isim::cluster {

struct LinkSpec {
  std::string kind;        // "nvlink", "infiniband", "roce"
  double gbps = 0;         // GB/s (1e9 bytes per second), one direction
  double latency_s = 0;    // per transfer, before its first byte moves
  bool operator==(const LinkSpec&) const = default;
};

// NVLink 4 (H100/H200 SXM): 900 GB/s bidirectional per GPU, 450 GB/s each way (NVIDIA H100
// datasheet); a few microseconds per transfer.
inline LinkSpec default_nvlink() { return {"nvlink", 450.0, 3e-6}; }
// InfiniBand NDR, one 400 Gb/s ConnectX-7 NIC per GPU as in a DGX H100: 50 GB/s, with RDMA
// setup in the order of 10 microseconds.
inline LinkSpec default_infiniband() { return {"infiniband", 50.0, 10e-6}; }

}  // namespace isim::cluster
