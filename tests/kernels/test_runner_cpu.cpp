// The CPU runner: determinism, chunked prefill against whole prefill, decode continuing from
// either, and bad batches.
#include <doctest/doctest.h>

#include <cstring>

#include <cmath>
#include <stdexcept>

#include "kernels/runner/runner.h"

using namespace isim::kernels::runner;

namespace {

RunnerConfig tiny_config(uint64_t seed = 7) {
  RunnerConfig c;
  c.dims = {
      .layers = 2, .hidden = 64, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 96, .vocab = 97};
  c.block_tokens = 4;
  c.num_blocks = 64;
  c.seed = seed;
  c.threads = 2;
  return c;
}

std::vector<int32_t> prompt(int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 37 + 11) % 97);
  return t;
}

// Prefills `p` in chunks of `chunk` tokens (sequence blocks from `first`), then decodes `steps`
// tokens greedily; returns the generated tokens and the logits of every produced token.
std::pair<std::vector<int32_t>, std::vector<float>> generate(Runner& r,
                                                             const std::vector<int32_t>& p,
                                                             size_t chunk, int steps,
                                                             int32_t first) {
  std::vector<int32_t> out;
  std::vector<float> logits;
  const int32_t bt = r.config().block_tokens;
  StepOptions keep{.keep_logits = true};
  size_t done = 0;
  while (done < p.size()) {
    const size_t n = std::min(chunk, p.size() - done);
    Step s{.tokens = {p.begin() + long(done), p.begin() + long(done + n)},
           .kv_before = int64_t(done),
           .blocks = block_range(first, int64_t(done + n), bt),
           .logits = done + n == p.size()};
    StepResult res = r.step({s}, keep);
    done += n;
    if (done == p.size()) {
      out.push_back(res.tokens.at(0));
      logits.insert(logits.end(), res.logits.begin(), res.logits.end());
    } else {
      CHECK(res.tokens.empty());
    }
  }
  for (int i = 0; i < steps; ++i) {
    const int64_t kv = int64_t(p.size()) + i;
    Step s{.tokens = {out.back()}, .kv_before = kv, .blocks = block_range(first, kv + 1, bt)};
    StepResult res = r.step({s}, keep);
    out.push_back(res.tokens.at(0));
    logits.insert(logits.end(), res.logits.begin(), res.logits.end());
  }
  return {out, logits};
}

}  // namespace

TEST_CASE("runner cpu: the same seed gives the same tokens and logits; another seed does not") {
  auto a = make_cpu_runner(tiny_config());
  auto b = make_cpu_runner(tiny_config());
  auto c = make_cpu_runner(tiny_config(8));
  const auto ra = generate(*a, prompt(13), 13, 6, 0);
  const auto rb = generate(*b, prompt(13), 13, 6, 0);
  const auto rc = generate(*c, prompt(13), 13, 6, 0);
  CHECK(ra.first == rb.first);
  CHECK(ra.second == rb.second);  // bit-identical
  CHECK(ra.second != rc.second);
  REQUIRE(ra.second.size() == 7 * 97);
  for (float v : ra.second) REQUIRE(std::isfinite(v));
}

TEST_CASE("runner cpu: chunked prefill then decode is bit-identical to whole prefill then decode") {
  auto whole = make_cpu_runner(tiny_config());
  auto chunked = make_cpu_runner(tiny_config());
  const auto p = prompt(19);
  const auto rw = generate(*whole, p, 19, 8, 3);
  const auto rc = generate(*chunked, p, 5, 8, 20);  // chunks 5,5,5,4 in other blocks
  CHECK(rw.first == rc.first);
  // Batch invariance: rows are computed alone, so chunking changes no bit of any logit.
  CHECK(rw.second == rc.second);
  // Nor of the KV: the sequence's cache in blocks 3.. of one pool equals blocks 20.. of the other.
  const auto kw = whole->kv_pool(), kc = chunked->kv_pool();
  const int64_t blocks = (19 + 8 + 3) / 4;
  for (int64_t plane = 0; plane < kw.planes; ++plane)
    for (int64_t b = 0; b < blocks; ++b) {
      const auto* x = static_cast<const char*>(kw.base) + plane * kw.plane_stride() + (3 + b) * kw.block_bytes;
      const auto* y = static_cast<const char*>(kc.base) + plane * kc.plane_stride() + (20 + b) * kc.block_bytes;
      // The last block is partly unwritten (zero in both pools).
      CHECK(std::memcmp(x, y, size_t(kw.block_bytes)) == 0);
    }
}

TEST_CASE("runner cpu: a row's logits do not depend on the batch it runs in") {
  // 40 one-token decodes (above the threaded-row threshold) against each alone.
  auto big = make_cpu_runner(tiny_config());
  auto alone = make_cpu_runner(tiny_config());
  std::vector<Step> batch;
  for (int32_t i = 0; i < 40; ++i)
    batch.push_back(Step{.tokens = {i % 97}, .kv_before = 0, .blocks = {i}});
  const StepResult all = big->step(batch, StepOptions{.keep_logits = true});
  for (size_t i = 0; i < batch.size(); ++i) {
    const StepResult one = alone->step({batch[i]}, StepOptions{.keep_logits = true});
    REQUIRE(one.logits.size() == 97);
    CHECK(std::equal(one.logits.begin(), one.logits.end(), all.logits.begin() + long(i * 97)));
  }
}

TEST_CASE("runner cpu: one mixed batch equals the same sequences run one by one") {
  auto mixed = make_cpu_runner(tiny_config());
  auto single = make_cpu_runner(tiny_config());
  const int32_t bt = 4;
  // Sequence A: prompt of 9 already prefilled; sequence B: a fresh chunk of 6.
  const auto pa = prompt(9);
  for (Runner* r : {mixed.get(), single.get()})
    r->step({Step{.tokens = pa, .kv_before = 0, .blocks = block_range(0, 9, bt)}});
  Step decode{.tokens = {5}, .kv_before = 9, .blocks = block_range(0, 10, bt)};
  Step chunk{.tokens = {1, 2, 3, 4, 5, 6}, .kv_before = 0, .blocks = block_range(10, 6, bt)};
  StepOptions keep{.keep_logits = true};
  // Chunk listed first: the runner reorders rows (decode first) but returns tokens in step order.
  const StepResult m = mixed->step({chunk, decode}, keep);
  const StepResult s1 = single->step({chunk}, keep);
  const StepResult s2 = single->step({decode}, keep);
  REQUIRE(m.tokens.size() == 2);
  CHECK(m.tokens[0] == s1.tokens[0]);
  CHECK(m.tokens[1] == s2.tokens[0]);
  for (int i = 0; i < 97; ++i) {
    CHECK(m.logits[size_t(i)] == s1.logits[size_t(i)]);  // exactly: batch invariant
    CHECK(m.logits[size_t(97 + i)] == s2.logits[size_t(i)]);
  }
}

TEST_CASE("runner cpu: phase times are reported only when asked") {
  auto r = make_cpu_runner(tiny_config());
  Step s{.tokens = prompt(8), .kv_before = 0, .blocks = block_range(0, 8, 4)};
  const StepResult quiet = r->step({s});
  CHECK(quiet.times.total_us == 0);
  const StepResult t = r->step({s}, {.time_phases = true});
  CHECK(t.times.dense_us > 0);
  CHECK(t.times.prefill_attention_us > 0);
  CHECK(t.times.decode_attention_us == 0);  // no decode step
  CHECK(t.times.lm_head_us > 0);
  CHECK(t.times.total_us >= t.times.dense_us + t.times.prefill_attention_us + t.times.lm_head_us);
}

TEST_CASE("runner cpu: bad batches and shapes are rejected with the field named") {
  auto r = make_cpu_runner(tiny_config());
  const auto message = [&](const Step& s) {
    try {
      r->step({s});
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message(Step{.tokens = {}, .kv_before = 0, .blocks = {}}).find("batch[0].tokens") == 0);
  CHECK(message(Step{.tokens = {1, 2}, .kv_before = 3, .blocks = {0}}).find("batch[0].blocks") ==
        0);
  CHECK(message(Step{.tokens = {1}, .kv_before = 0, .blocks = {64}})
            .find("batch[0].blocks[0] = 64") == 0);
  CHECK(message(Step{.tokens = {97}, .kv_before = 0, .blocks = {0}}).find("token 97") !=
        std::string::npos);
  RunnerConfig bad = tiny_config();
  bad.dims.kv_heads = 3;
  CHECK_THROWS_WITH_AS(make_cpu_runner(bad), doctest::Contains("kv_heads"), std::invalid_argument);
}
