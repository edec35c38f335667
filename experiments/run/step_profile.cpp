#include "experiments/run/step_profile.h"

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/run/run.h"

namespace isim::exp {

namespace {

void check_range(const char* flag, int64_t v, int64_t hi) {
  if (v < 0 || v > hi)
    throw InputError(
        fmt::format("{}: {} is out of range; give a whole number in [0, {}]", flag, v, hi));
}

sim::BatchShape batch_of(const StepQuery& q) {
  check_range("--decode", q.decode, int64_t{1} << 20);
  check_range("--kv", q.kv, int64_t{1} << 30);
  check_range("--prefill", q.prefill, int64_t{1} << 20);
  check_range("--prefill-kv", q.prefill_kv, int64_t{1} << 30);
  if (q.decode == 0 && q.prefill == 0)
    throw InputError("--decode: nothing to run; give --decode B > 0 or --prefill C > 0");
  sim::BatchShape b;
  b.num_decode = static_cast<int32_t>(q.decode);
  b.decode_kv_tokens = q.decode * q.kv;
  if (q.decode > 0) b.decode_kv_max = b.decode_kv_min = q.kv;
  b.total_tokens = q.decode + q.prefill;
  b.num_logits = static_cast<int32_t>(q.decode + (q.prefill > 0 ? 1 : 0));
  if (q.prefill > 0) b.prefills.push_back({q.prefill, q.prefill_kv});
  return b;
}

}  // namespace

StepProfile profile_step(const sim::Profile& p, const StepQuery& q) {
  StepProfile out;
  out.batch = batch_of(q);
  ReplicaGroup grp;
  grp.par = q.par;
  check_parallel_profile(grp, p, "--dp", "--ep");
  out.profile = group_profile(grp, p, "--ep");
  const sim::CostModel cost(out.profile);
  out.parts = cost.parts(out.batch);
  const cluster::DpSpec dp = dp_spec(grp, out.profile, q.links);
  const double decode = static_cast<double>(q.decode);
  const int tp = out.profile.model.tp;
  out.group = dp.group >= 0;
  if (!out.group) {
    out.step_ns = out.parts.total;
    const double s = sim::to_seconds(out.step_ns);
    out.tokens_per_s_per_gpu = decode / s / tp;
    out.tokens_per_s = decode * q.par.dp / s;
    return out;
  }
  out.shape = dp.shape;
  const double z = sim::expected_max_std_normal(out.shape.ranks());
  const auto cores = static_cast<size_t>(out.shape.cores);
  out.own = sim::core_own_ns(cost, out.parts.total, out.batch.total_tokens);
  out.step = sim::group_step(cost, out.shape, z, std::vector<sim::Nanos>(cores, out.own),
                             std::vector<int64_t>(cores, out.batch.total_tokens));
  if (out.shape.ep) {
    const sim::ModelShape& m = out.profile.model;
    out.load = sim::rank_load(m.moe.experts, m.moe.experts_per_token, out.shape.ranks(),
                              static_cast<double>(out.batch.total_tokens) * out.shape.cores,
                              out.shape.skew, z);
  }
  out.step_ns = out.step.span();
  const double s = sim::to_seconds(out.step_ns);
  out.tokens_per_s_per_gpu = decode / s / tp;
  out.tokens_per_s = decode * out.shape.cores / s;
  return out;
}

}  // namespace isim::exp
