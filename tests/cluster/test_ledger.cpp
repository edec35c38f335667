// The ledger's session records (cluster/ledger.h), by hand: a finished session's record is built
// when it finishes, the others' when the records are taken, once.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "cluster/ledger.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::seg;

constexpr sim::Nanos kLedgerMs = 1'000'000;

TEST_CASE("Ledger: records of finished, on-replica, skipped and moved sessions, taken once") {
  // a: 2 segments (10 in / 4 out, then 6 in / 3 out): 7 outputs, 6 returned tokens.
  // b: on replica 1 at the end; c: skipped; d: arrives at 2 s by a start dependency.
  trace::Session a{"a", 0.5, {seg(10, 4), seg(6, 3)}};
  const trace::Trace tr{a, trace::Session{"b", 1.0, {seg(5, 2)}},
                        trace::Session{"c", 1.5, {seg(500, 2)}},
                        trace::Session{"d", 1.0, {seg(4, 5)}}};
  cluster::Ledger l(tr);
  sim::SessionMetrics ma;
  ma.first_token = 600 * kLedgerMs;  // ttft 100 ms
  ma.finish = 2500 * kLedgerMs;      // e2e 2 s
  ma.decode_time = 120 * kLedgerMs;  // over 5 steps: 24 ms a token
  ma.decode_steps = 5;
  ma.resume_ttft_sum = 30 * kLedgerMs;  // one resume: 30 ms
  ma.resumes_with_token = 1;
  ma.intercept_time = 700 * kLedgerMs;  // (2 s - 0.7 s) / (7 + 6) tokens = 0.1 s a token
  ma.recomputed_tokens = 16;
  ma.replica_first = 0;
  ma.replica_last = 1;
  ma.migrations = 1;
  l.placed(0, 0, 3);
  l.finished(0, ma);
  l.placed(1, 1, 7);
  l.skipped(2);
  l.arrived(3, 2000 * kLedgerMs);
  l.placed(3, 0, 1);
  sim::SessionMetrics md;
  md.first_token = 2250 * kLedgerMs;  // 250 ms after its moved arrival
  md.finish = 2400 * kLedgerMs;
  md.decode_steps = 4;
  md.decode_time = 80 * kLedgerMs;
  l.finished(3, md);
  sim::SessionMetrics mb;
  mb.recomputed_tokens = 9;
  mb.replica_first = mb.replica_last = 1;
  int asked = 0;
  const auto on_replica = [&](int32_t r, int32_t h) -> const sim::SessionMetrics& {
    ++asked;
    CHECK(r == 1);  // only b is on a replica
    CHECK(h == 7);
    return mb;
  };
  const std::vector<sim::SessionRecord> recs = l.take_records(on_replica);
  CHECK(asked == 1);
  REQUIRE(recs.size() == 4);
  const sim::SessionRecord& ra = recs[0];
  CHECK(ra.id == "a");
  CHECK(ra.status == "finished");
  CHECK(ra.arrival_s == 0.5);
  CHECK(ra.ttft_s == doctest::Approx(0.1));
  CHECK(ra.e2e_s == doctest::Approx(2.0));
  CHECK(ra.first_token_s == doctest::Approx(0.6));
  CHECK(ra.finish_s == doctest::Approx(2.5));
  CHECK(ra.tpot_s == doctest::Approx(0.024));
  CHECK(ra.resume_ttft_s == doctest::Approx(0.03));
  CHECK(ra.intercept_s == doctest::Approx(0.7));
  CHECK(ra.normalized_latency_s == doctest::Approx(0.1));
  CHECK(ra.output_tokens == 7);
  CHECK(ra.returned_tokens == 6);
  CHECK(ra.segments == 2);
  CHECK(ra.recomputed_tokens == 16);
  CHECK(ra.replica_first == 0);
  CHECK(ra.replica_last == 1);
  CHECK(ra.migrations == 1);
  const sim::SessionRecord& rb = recs[1];
  CHECK(rb.status == "unfinished");
  CHECK(rb.recomputed_tokens == 9);
  CHECK(rb.replica_last == 1);
  CHECK(rb.ttft_s < 0);  // no first token counted for an unfinished session
  CHECK(rb.finish_s < 0);
  CHECK(recs[2].status == "skipped");
  CHECK(recs[2].id == "c");
  CHECK(recs[2].replica_first == -1);
  const sim::SessionRecord& rd = recs[3];
  CHECK(rd.status == "finished");
  CHECK(rd.arrival_s == doctest::Approx(2.0));  // the dependency's instant, not its arrival_s
  CHECK(rd.ttft_s == doctest::Approx(0.25));
  CHECK(rd.e2e_s == doctest::Approx(0.4));
  CHECK(rd.tpot_s == doctest::Approx(0.02));
  CHECK(rd.resume_ttft_s < 0);  // no resume
  CHECK_THROWS_AS(l.take_records(on_replica), std::logic_error);
}
