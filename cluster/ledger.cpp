#include "cluster/ledger.h"

#include <stdexcept>

namespace isim::cluster {

Ledger::Ledger(const trace::Trace& trace)
    : trace_(trace),
      loc_(trace.size()),
      status_(trace.size(), Status::kPending),
      records_(trace.size()) {
  // At most one record a segment: reserved (untouched memory) so they never move as they grow.
  size_t segments = 0;
  for (const trace::Session& s : trace) segments += s.segments.size();
  turns_.reserve(segments);
}

void Ledger::set_status(int32_t i, Status st) {
  Status& cur = status_[static_cast<size_t>(i)];
  on_replica_ += (st == Status::kOnReplica) - (cur == Status::kOnReplica);
  cur = st;
}

void Ledger::placed(int32_t i, int32_t replica, int32_t handle) {
  if (status(i) == Status::kPending) {  // it arrives: its first turn is sent
    const bool moved = !arrived_.empty() && arrived_[static_cast<size_t>(i)] >= 0;
    buckets_.sent(moved ? arrived_[static_cast<size_t>(i)]
                        : sim::from_seconds(trace_[static_cast<size_t>(i)].arrival_s));
  }
  loc_[static_cast<size_t>(i)] = {replica, handle};
  set_status(i, Status::kOnReplica);
}

void Ledger::finished(int32_t i, const sim::SessionMetrics& m) {
  loc_[static_cast<size_t>(i)] = {};
  set_status(i, Status::kFinished);
  fill(static_cast<size_t>(i), m, Status::kFinished);
}

void Ledger::arrived(int32_t i, sim::Nanos t) {
  if (arrived_.empty()) arrived_.assign(trace_.size(), -1);
  arrived_[static_cast<size_t>(i)] = t;
}

void Ledger::turn(sim::TurnRecord t, sim::Nanos start, sim::Nanos first,
                  const std::vector<sim::GapRun>& gaps) {
  for (const sim::GapRun& g : gaps) itl_.add(g.gap_ns, g.count);
  buckets_.turn(start, first, gaps);
  if (keep_gaps_) {
    const sim::GapArena::Span s = gaps_.append(gaps);
    t.gaps_at = s.at;
    t.gaps_words = s.words;
  }
  turns_.push_back(t);
}

sim::TokenTallies Ledger::take_tallies() {
  sim::TokenTallies out;
  out.itl = itl_.sorted();
  itl_ = {};
  buckets_.finish(out.origin_ns, out.per_second);
  return out;
}

std::vector<sim::SessionRecord> Ledger::take_records(
    const std::function<const sim::SessionMetrics&(int32_t, int32_t)>& on_replica) {
  if (records_.size() != trace_.size())
    throw std::logic_error("Ledger::take_records: the records were taken already");
  static const sim::SessionMetrics none;
  for (size_t i = 0; i < trace_.size(); ++i) {
    const Status st = status_[i];
    if (st == Status::kFinished) continue;
    fill(i, st == Status::kOnReplica ? on_replica(loc_[i].replica, loc_[i].handle) : none, st);
  }
  return std::move(records_);
}

void Ledger::fill(size_t i, const sim::SessionMetrics& m, Status st) {
  const trace::Session& src = trace_[i];
  sim::SessionRecord& r = records_[i];
  r.id = src.id;
  r.replica_first = m.replica_first;
  r.replica_last = m.replica_last;
  r.migrations = m.migrations;
  const bool moved = !arrived_.empty() && arrived_[i] >= 0;
  r.arrival_s = moved ? sim::to_seconds(arrived_[i]) : src.arrival_s;
  r.segments = static_cast<int64_t>(src.segments.size());
  r.output_tokens = src.total_output();
  r.returned_tokens = src.returned_tokens();
  r.recomputed_tokens = m.recomputed_tokens;
  r.swapped_out_bytes = m.swapped_out_bytes;
  r.swapped_in_bytes = m.swapped_in_bytes;
  r.preemptions = m.preemptions;
  r.prefix_hit_tokens = m.prefix_hit_tokens;
  r.intercept_s = sim::to_seconds(m.intercept_time);
  if (st != Status::kFinished) {
    r.status = st == Status::kSkipped      ? "skipped"
               : st == Status::kNotStarted ? "not_started"
                                           : "unfinished";
    return;
  }
  const sim::Nanos arrival = moved ? arrived_[i] : sim::from_seconds(src.arrival_s);
  r.status = "finished";
  r.first_token_s = sim::to_seconds(m.first_token);
  r.finish_s = sim::to_seconds(m.finish);
  r.ttft_s = sim::to_seconds(m.first_token - arrival);
  r.e2e_s = sim::to_seconds(m.finish - arrival);
  if (m.decode_steps > 0)
    r.tpot_s = sim::to_seconds(m.decode_time) / static_cast<double>(m.decode_steps);
  if (m.resumes_with_token > 0)
    r.resume_ttft_s =
        sim::to_seconds(m.resume_ttft_sum) / static_cast<double>(m.resumes_with_token);
  r.normalized_latency_s = sim::to_seconds(m.finish - arrival - m.intercept_time) /
                           static_cast<double>(r.output_tokens + r.returned_tokens);
}

}  // namespace isim::cluster
