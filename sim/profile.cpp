#include "sim/profile.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "core/input_error.h"
#include "core/input_file.h"
#include "sim/cost_model.h"
#include "sim/profile_consistency.h"
#include "sim/profile_reader.h"
#include "traces/limits.h"

namespace isim::sim {
namespace {

using namespace profile_io;  // NOLINT(google-build-using-namespace)

const Names kTopKeys = {
    "schema",  "provenance", "device",        "model",  "kv",        "saturation_tokens",
    "forward", "swap",       "step_overhead", "memory", "validation"};
const Names kValidationKeys = {"batch", "predicted_ms", "measured_ms"};
const Names kDeviceKeys = {"name", "memory_gib"};
const Names kModelKeys = {"name", "layers",        "hidden",       "heads",  "kv_heads", "head_dim",
                          "ffn",  "vocab",         "dtype",        "params", "tp",       "moe",
                          "mla",  "active_params", "weight_dtype", "ep"};
const Names kMoeKeys = {"experts", "experts_per_token", "expert_ffn", "shared_ffn", "dense_layers"};
const Names kMlaKeys = {"kv_lora_rank", "qk_rope_head_dim", "v_head_dim"};
const Names kWeightDtypes = {"fp8", "int8", "int4"};
const Names kKvKeys = {"block_tokens"};
const Names kSwapKeys = {"h2d", "d2h", "duplex_factor", "per_copy_overhead_us", "compute_slowdown"};

void read_provenance(const Reader& r, const MapNode& top, Profile& p) {
  const std::string expected = "a map of strings with at least source";
  const MapNode m = r.map(r.need(top, "provenance", expected), "provenance", expected);
  for (const auto& [key, value] : m.entries) {
    p.provenance.emplace_back(key, r.text(value, child("provenance", key)));
  }
  const auto source = Reader::find(m, "source");
  if (!source)
    r.fail("provenance.source", fmt::format("missing (expected one of {})", join(kSources)));
  if (!contains(kSources, p.provenance_value("source"))) {
    r.fail(*source, "provenance.source",
           fmt::format("unknown source '{}' (valid: {})", p.provenance_value("source"),
                       join(kSources)));
  }
}

// An integer in [lo, hi] (model.moe's counts, some of which may be 0).
int bounded(const Reader& r, const MapNode& m, std::string_view key, int lo, int hi,
            const std::string& what) {
  const std::string path = child(m.path, key);
  const YAML::Node n = r.need(m, key, what);
  const int64_t v = r.integer(n, path);
  if (v < lo || v > hi)
    r.fail(n, path, fmt::format("must be in [{}, {}] ({}), got {}", lo, hi, what, v));
  return static_cast<int>(v);
}

// The optional keys of a MoE, MLA or quantized model (absent: a dense bf16/fp16 model).
void read_model_options(const Reader& r, const MapNode& m, ModelShape& model) {
  if (Reader::find(m, "moe")) {
    const MapNode e = r.section(m, "moe", kMoeKeys);
    MoeShape& moe = model.moe;
    moe.experts = r.count(e, "experts");
    moe.experts_per_token =
        bounded(r, e, "experts_per_token", 1, moe.experts, "routed experts per token");
    moe.expert_ffn = r.count(e, "expert_ffn");
    moe.shared_ffn = bounded(r, e, "shared_ffn", 0, std::numeric_limits<int>::max(),
                             "the shared experts' FFN width, 0 for none");
    moe.dense_layers = bounded(r, e, "dense_layers", 0, model.layers - 1,
                               "layers with a dense FFN, fewer than model.layers");
  }
  if (Reader::find(m, "mla")) {
    const MapNode a = r.section(m, "mla", kMlaKeys);
    model.mla.kv_lora_rank = r.count(a, "kv_lora_rank");
    model.mla.qk_rope_head_dim = r.count(a, "qk_rope_head_dim");
    if (Reader::find(a, "v_head_dim")) model.mla.v_head_dim = r.count(a, "v_head_dim");
  }
  if (const auto ep = Reader::find(m, "ep")) {
    if (!model.moe.given())
      r.fail(*ep, "model.ep",
             "expert parallelism needs a MoE model (model.moe is absent: a dense model)");
    model.ep = bounded(r, m, "ep", 1, model.moe.experts,
                       "expert-parallel ranks, at most model.moe.experts");
  }
  if (Reader::find(m, "active_params")) {
    model.active_params =
        r.number(m, "active_params", Bound::kPositive, "the parameters a token uses");
    if (model.active_params > model.params)
      r.fail(*Reader::find(m, "active_params"), "model.active_params",
             fmt::format("must be at most model.params ({}), got {}", model.params,
                         model.active_params));
  }
  if (const auto w = Reader::find(m, "weight_dtype")) {
    model.weight_dtype = r.text(*w, "model.weight_dtype");
    if (!contains(kWeightDtypes, model.weight_dtype))
      r.fail(*w, "model.weight_dtype",
             fmt::format("unknown weight dtype '{}' (valid: {})", model.weight_dtype,
                         join(kWeightDtypes)));
  }
}

void read_model(const Reader& r, const MapNode& top, ModelShape& model) {
  const MapNode m = r.section(top, "model", kModelKeys);
  model.name = r.name(m, "name");
  model.layers = r.count(m, "layers");
  model.hidden = r.count(m, "hidden");
  model.heads = r.count(m, "heads");
  model.kv_heads = r.count(m, "kv_heads");
  model.head_dim = r.count(m, "head_dim");
  model.ffn = r.count(m, "ffn");
  model.vocab = r.count(m, "vocab");
  const YAML::Node dtype = r.need(m, "dtype", fmt::format("one of {}", join(kDtypes)));
  model.dtype = r.text(dtype, "model.dtype");
  if (!contains(kDtypes, model.dtype)) {
    r.fail(dtype, "model.dtype",
           fmt::format("unknown dtype '{}' (valid: {})", model.dtype, join(kDtypes)));
  }
  model.params = r.number(m, "params", Bound::kPositive, "a parameter count");
  model.tp = r.count(m, "tp");
  read_model_options(r, m, model);
  if (const auto bad = heads_problem(model.heads, model.kv_heads, model.tp, model.mla.given()))
    r.fail(*Reader::find(m, bad->key), "model." + bad->key, bad->reason);
}

void read_swap(const Reader& r, const MapNode& top, SwapSpec& s) {
  const MapNode m = r.section(top, "swap", kSwapKeys);
  s.h2d_gbps =
      r.curve(m, "h2d", "bytes", Bound::kPositive, "gbps", Bound::kPositive, "a bandwidth");
  s.d2h_gbps =
      r.curve(m, "d2h", "bytes", Bound::kPositive, "gbps", Bound::kPositive, "a bandwidth");
  s.duplex_factor = r.number(m, "duplex_factor", Bound::kPositive, "a bandwidth multiplier");
  if (s.duplex_factor > 1) {
    r.fail(*Reader::find(m, "duplex_factor"), "swap.duplex_factor",
           fmt::format("must be at most 1 (both directions at once never go faster), got {}",
                       s.duplex_factor));
  }
  s.per_copy_overhead_us = r.number(m, "per_copy_overhead_us", Bound::kNonNegative, "a time");
  s.compute_slowdown = 0;
  if (Reader::find(m, "compute_slowdown"))
    s.compute_slowdown =
        r.number(m, "compute_slowdown", Bound::kNonNegative, "a fraction of the forward time");
}

// The KV bytes of one block, computed in double so that no product can overflow, must be at
// most kMaxBlockBytes: int64 byte counts of a session's blocks (ModelShape::kv_bytes_per_token
// x block_tokens x blocks < 2^31 x 2^31) then stay exact.
void check_block_bytes(const Reader& r, const MapNode& top, const Profile& p) {
  constexpr double kMaxBlockBytes = 2147483648.0;  // 2 GiB
  const ModelShape& m = p.model;
  const double per_token = std::floor(m.kv_bytes_per_token_unsplit() / m.tp);
  const double block = per_token * p.block_tokens;
  if (block <= kMaxBlockBytes) return;
  if (m.mla.given())
    r.fail(*Reader::find(top, "model"), "model",
           fmt::format("KV bytes per token layers {} x (mla.kv_lora_rank {} + "
                       "mla.qk_rope_head_dim {}) x {} bytes = {:.6g}, times kv.block_tokens {} = "
                       "{:.6g} bytes a block; expected at most {:.0f} (2 GiB)",
                       m.layers, m.mla.kv_lora_rank, m.mla.qk_rope_head_dim, m.dtype_bytes(),
                       per_token, p.block_tokens, block, kMaxBlockBytes));
  r.fail(*Reader::find(top, "model"), "model",
         fmt::format("KV bytes per token 2 x layers {} x kv_heads {} x head_dim {} x {} bytes / tp "
                     "{} = {:.6g}, times kv.block_tokens {} = {:.6g} bytes a block; expected at "
                     "most {:.0f} (2 GiB)",
                     m.layers, m.kv_heads, m.head_dim, m.dtype_bytes(), m.tp, per_token,
                     p.block_tokens, block, kMaxBlockBytes));
}

// saturation_tokens is a token count (at most traces/limits.h's kMaxTokens), and the forward
// pass of twice as many tokens (what CostModel::marginal_ns_per_token prices; the engine and
// min-waste price T(saturation_tokens)) must take at most kMaxSeconds, the limit on any time
// (traces/limits.h): the cost model's int64 nanoseconds (sim/time.h) then cannot overflow there.
void check_saturation(const Reader& r, const MapNode& top, const Profile& p) {
  const YAML::Node n = *Reader::find(top, "saturation_tokens");
  const int64_t s = p.saturation_tokens;
  if (s > trace::kMaxTokens)
    r.fail(n, "saturation_tokens",
           fmt::format("must be at most {} (the limit on a token count), got {}", trace::kMaxTokens,
                       s));
  double ns = std::numeric_limits<double>::infinity();
  try {
    ns = static_cast<double>(CostModel(p).T(2 * s));
  } catch (const std::range_error&) {  // past int64 nanoseconds: past the limit too
  }
  if (!(ns <= trace::kMaxSeconds * 1e9))
    r.fail(n, "saturation_tokens",
           fmt::format("the forward pass of 2 x saturation_tokens = {} tokens takes {}, more than "
                       "{:.0f} s (about 126 years, the limit on a time); expected a saturation "
                       "point the forward model prices within it",
                       2 * s,
                       std::isfinite(ns) ? fmt::format("{:.6g} s", ns / 1e9)
                                         : std::string("more than int64 nanoseconds hold"),
                       trace::kMaxSeconds));
}

Profile read_document(const Reader& r, const YAML::Node& root) {
  const MapNode top = r.map(root, "", fmt::format("a map with keys {}", join(kTopKeys)));
  const auto schema = Reader::find(top, "schema");
  if (!schema) r.fail("schema", fmt::format("missing (expected {})", kSchema));
  if (!schema->IsScalar() || schema->Scalar() != kSchema) {
    r.fail(*schema, "schema", fmt::format("unsupported {} (expected {})", kind(*schema), kSchema));
  }
  r.only(top, kTopKeys);

  Profile p;
  read_provenance(r, top, p);
  const MapNode device = r.section(top, "device", kDeviceKeys);
  p.device.name = r.name(device, "name");
  p.device.memory_gib = r.number(device, "memory_gib", Bound::kPositive, "a size in GiB");
  read_model(r, top, p.model);
  const MapNode kv = r.section(top, "kv", kKvKeys);
  p.block_tokens = r.count(kv, "block_tokens");
  check_block_bytes(r, top, p);
  p.saturation_tokens = r.count64(top, "saturation_tokens");
  read_forward(r, top, p);
  check_saturation(r, top, p);
  read_swap(r, top, p.swap);
  read_serving(r, top, p);
  if (const auto v = Reader::find(top, "validation")) {
    const std::string expected = "a list of {batch, predicted_ms, measured_ms}";
    if (!v->IsSequence())
      r.fail(*v, "validation", fmt::format("expected {}, got {}", expected, kind(*v)));
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string path = element("validation", i);
      const MapNode m = r.map((*v)[i], path, "a map with keys batch, predicted_ms, measured_ms");
      r.only(m, kValidationKeys);
      ValidationPoint pt;
      pt.batch = r.name(m, "batch");
      pt.predicted_ms = r.number(m, "predicted_ms", Bound::kNonNegative, "a time");
      pt.measured_ms = r.number(m, "measured_ms", Bound::kPositive, "a time");
      p.validation.push_back(pt);
    }
  }
  return p;
}

}  // namespace

int ModelShape::dtype_bytes() const {
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "fp32") return 4;
  if (dtype == "fp8") return 1;
  throw InputError(
      fmt::format("model.dtype: unknown dtype '{}' (valid: {})", dtype, join(kDtypes)));
}

double ModelShape::kv_bytes_per_token_unsplit() const {
  if (mla.given())
    return static_cast<double>(layers) *
           (static_cast<double>(mla.kv_lora_rank) + mla.qk_rope_head_dim) * dtype_bytes() *
           tp;  // replicated: every rank holds it all
  return 2.0 * layers * kv_heads * head_dim * dtype_bytes();
}

int64_t ModelShape::kv_bytes_per_token() const {
  if (mla.given())
    return int64_t{layers} * (int64_t{mla.kv_lora_rank} + mla.qk_rope_head_dim) * dtype_bytes();
  return int64_t{2} * layers * kv_heads_per_gpu() * head_dim * dtype_bytes();
}

double ModelShape::weight_dtype_bytes() const {
  if (weight_dtype.empty()) return dtype_bytes();
  if (weight_dtype == "fp8" || weight_dtype == "int8") return 1;
  if (weight_dtype == "int4") return 0.5;
  throw InputError(
      fmt::format("model.weight_dtype: unknown '{}' (valid: fp8, int8, int4)", weight_dtype));
}

double ModelShape::routed_expert_params() const {
  return moe.moe_layers(layers) * static_cast<double>(moe.experts) * 3.0 * hidden *
         static_cast<double>(moe.expert_ffn);
}

double ModelShape::weight_bytes_per_gpu() const {
  const double outer =
      weight_dtype.empty() ? 0 : std::min(params, 2.0 * vocab * static_cast<double>(hidden));
  const double routed = ep > 1 ? std::min(params - outer, routed_expert_params()) : 0;
  const double w = weight_dtype_bytes();
  return (outer * dtype_bytes() + (params - outer - routed) * w) / tp + routed * w / ep;
}

std::string Profile::provenance_value(const std::string& key) const {
  for (const auto& [k, v] : provenance) {
    if (k == key) return v;
  }
  return "";
}

double Profile::validation_mean_abs_error() const {
  if (validation.empty()) return 0;
  double sum = 0;
  for (const ValidationPoint& v : validation) sum += std::abs(v.error());
  return sum / static_cast<double>(validation.size());
}

bool Profile::operator==(const Profile& o) const {
  const bool same = provenance == o.provenance && device == o.device && model == o.model &&
                    block_tokens == o.block_tokens && saturation_tokens == o.saturation_tokens &&
                    form == o.form && swap == o.swap && validation == o.validation &&
                    step_overhead == o.step_overhead && memory == o.memory;
  if (!same) return false;
  // Only the active forward form is part of a profile (it is all that gets written).
  return form == ForwardForm::kLinear ? linear == o.linear : tables == o.tables;
}

Profile parse_profile(const std::string& yaml_text, const std::string& origin) {
  YAML::Node doc;
  int docs = 0;
  try {
    require_utf8(yaml_text, origin);  // as every YAML reader (core/strict_yaml.h)
    // Not YAML::LoadAll: it never returns on text such as "," (core/strict_yaml.h).
    docs = count_yaml_documents(yaml_text);
    if (docs == 1) doc = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    if (e.mark.line >= 0) {
      throw InputError(fmt::format("{}:{}: invalid YAML: {}", origin, e.mark.line + 1, e.msg));
    }
    throw InputError(fmt::format("{}: invalid YAML: {}", origin, e.msg));
  }
  if (docs != 1) {
    throw InputError(fmt::format("{}: expected one YAML document, found {}", origin, docs));
  }
  return read_document(Reader(origin), doc);
}

Profile load_profile(const std::string& path) {
  Profile p = parse_profile(read_input_file(path, "a YAML profile"), path);
  p.path = path;
  return p;
}

}  // namespace isim::sim
