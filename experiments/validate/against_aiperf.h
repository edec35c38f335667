// isim validate --against aiperf DIR: NVIDIA AIPerf's results as a BenchRun (against_bench.h).
//
// Source: ai-dynamo/aiperf at commit db4f6397d11ee2d4cfbb41f70b2327315163dcf0 (2025-10-10):
// docs/tutorials/working-with-profile-exports.md (the two files), aiperf/metrics/types/*.py
// (the definitions), aiperf/common/models/export_models.py (the aggregate JSON).
//
// Reads DIR/profile_export.jsonl, one record a line: metadata.conversation_id (string),
// metadata.x_correlation_id (optional string: the user session; when present it groups the
// turns, since one dataset conversation can be replayed by several sessions, and names them),
// metadata.turn_index (integer >= 0), metadata.request_start_ns (integer, epoch ns); metrics
// (each {value, unit}): input_sequence_length and output_sequence_length (unit "tokens"),
// time_to_first_token and request_latency (unit ns, us, ms or sec), inter_chunk_latency
// (optional: a list, same units); error: null, or an object (a failed request: not compared, not
// replayed; its metrics may be null). And DIR/profile_export_aiperf.json's
// benchmark_duration.avg (unit "sec"): the run's duration.
//
// AIPerf's definitions, converted to rows and used on both sides (NumPy statistics):
// - time_to_first_token = first response - request start; request_latency = last response -
//   request start; send = request_start_ns - the first record's.
// - inter_token_latency = (request_latency - time_to_first_token) / (output_sequence_length - 1),
//   per request with OSL >= 2 (RequestRow::tpot_s): AIPerf's ITL is what vLLM calls TPOT;
//   inter_chunk_latency (the gaps between streamed chunks) is vLLM's ITL.
// - benchmark_duration = last response - first request start; request_throughput = requests /
//   duration; output_token_throughput = sum of OSL / duration.
// Metrics (AIPerf's tags, its display units): time_to_first_token.{avg,p50,p90,p99} (ms),
// inter_token_latency.{avg,p50,p99} (ms), request_latency.{avg,p50,p99} (ms),
// output_token_throughput (tokens/sec), request_throughput (requests/sec), benchmark_duration
// (sec). The simulated duration is its last token - first send.
// Errors: `FILE:LINE: PATH: ...` for a record (missing key, wrong type, unknown unit: `expected
// unit one of ns, us, ms, sec, got "min"`); `FILE: ...` for the aggregate JSON; `DIR: not a
// folder` and `FILE: empty` for what is not there.
#pragma once

#include <string>

#include "experiments/validate/against_bench.h"

namespace isim::exp {

BenchRun read_aiperf(const std::string& dir);

// AIPerf's metrics over `rows` and `duration_s` (the list above).
MetricList aiperf_metrics(const std::vector<RequestRow>& rows, double duration_s);

}  // namespace isim::exp
