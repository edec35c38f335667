// Live executors: `live-cpu` and `live-cuda` run every iteration the engine schedules for real,
// on the synthetic transformer (kernels/runner) over a real paged KV pool, and report measured
// times. The engine's block ids are slots of that pool (GPU tier) and of a swap space (CPU
// tier), one to one. See "Executors" in the design.
//
// Contract:
// - The model is the profile's (kernels/runner/shard.h: shard_dims of its model shape, one TP
//   shard), with the profile's block size; the pools hold the engine's GPU and CPU block
//   counts. Inputs are synthetic tokens (live/integrity.h); every output is the greedy argmax
//   of the real logits, while lengths still follow the trace.
// - Virtual time: `execute` returns measured times (stall: synchronous swaps; busy: the forward
//   with pipelined swaps on the copy stream or worker thread beside it), so the engine's clock
//   advances by real execution while intercepts and arrivals stay virtual. CPU: steady clock;
//   CUDA: events for copies and the runner's event timers for the forward, wall clock for the
//   overlapped whole.
// - Integrity checks, always on (their own time is never counted):
//   - every block swapped out is checksummed at the source; the swap-out copy and, later, the
//     block it comes back to must carry the same checksum;
//   - KV about to be dropped (discard, preemption, eviction, dropped leading chunks) is kept
//     for the first and last layer (K and V); when the session recomputes those positions the
//     new KV must match within the dtype's tolerance (exactly, on the CPU backend);
//   - every session's token stream is recorded (report().tokens) so that runs under different
//     policies can be compared; a produced token must land at the end of its stream.
//   A failed check is recorded in report().violations (session, segment, block or position),
//   never thrown, so one run reports every failure.
// - Parameters (`executor: {name: live-cpu, ...}`): threads (CPU attention and row threads;
//   default 1, as isim-calibrate measures the CPU backend; 0 = all hardware threads), seed (weights, default 1), fault (none | swap | recompute: corrupt the first swapped
//   block's CPU copy, or feed one wrong token to the first recompute; for testing the checks),
//   max_pool_gib (host memory the pools may take, default 16). Unknown keys and bad values are
//   InputError naming `executor.KEY`.
// - live-cuda needs a CUDA build and a device; otherwise creating it is an InputError saying
//   which is missing.
#pragma once

#include <memory>
#include <string>

#include "sim/executor.h"

namespace isim::live {

// Checks an executor's parameters (and, for live-cuda, that a device exists) without building
// it; InputError naming `params.where.KEY` otherwise.
void check_executor(const std::string& name, const sim::ExecutorParams& params);
// Adds live-cpu and live-cuda to a registry.
void add_live_executors(sim::ExecutorRegistry& reg);
// Every executor of this build: sim, live-cpu, live-cuda. What the front end uses.
const sim::ExecutorRegistry& executor_registry();

}  // namespace isim::live
