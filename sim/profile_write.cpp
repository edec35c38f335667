// Writing profiles (YAML that load_profile reads back equal) and describing them.
#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string_view>

#include "core/atomic_file.h"
#include "core/input_error.h"
#include "sim/cost_model.h"
#include "sim/profile.h"
#include "sim/profile_check.h"
#include "sim/profile_reader.h"

namespace isim::sim {
namespace {

constexpr std::string_view kSchema = "isim-profile/1";

// ---- writing ----

std::string num(double v) {
  return fmt::format("{}", v);
}

bool plain_char(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view(" _-./()+,=").find(static_cast<char>(c)) != std::string_view::npos;
}

// True when `s` reads back as the same string written as a YAML plain scalar.
bool plain_safe(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return false;
  const unsigned char first = static_cast<unsigned char>(s.front());
  if (first == ' ' || first == '-' || first == ',' || s.back() == ' ') return false;
  for (const char c : s) {
    if (!plain_char(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string scalar(const std::string& s) {
  if (plain_safe(s)) return s;
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02X}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

std::string list(const std::vector<double>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ", ";
    out += num(v[i]);
  }
  return out + "]";
}

void write_curve(std::string& out, std::string_view indent, std::string_view key,
                 std::string_view xkey, std::string_view ykey, const Curve1D& c) {
  fmt::format_to(std::back_inserter(out), "{}{}:\n{}  {}: {}\n{}  {}: {}\n", indent, key, indent,
                 xkey, list(c.x), indent, ykey, list(c.y));
}

void write_grid(std::string& out, std::string_view indent, std::string_view key,
                std::string_view xkey, std::string_view ykey, const Grid2D& g) {
  fmt::format_to(std::back_inserter(out), "{}{}:\n{}  {}: {}\n{}  {}: {}\n{}  us:\n", indent, key,
                 indent, xkey, list(g.x), indent, ykey, list(g.y), indent);
  for (std::size_t i = 0; i < g.x.size(); ++i) {
    const auto begin = g.z.begin() + static_cast<std::ptrdiff_t>(i * g.y.size());
    const std::vector<double> row(begin, begin + static_cast<std::ptrdiff_t>(g.y.size()));
    fmt::format_to(std::back_inserter(out), "{}    - {}\n", indent, list(row));
  }
}

// Rows of the 4-D grid, one per (chunk, kv_prefill, decodes), chunk slowest.
void write_mixed(std::string& out, std::string_view indent, const Grid4D& g) {
  const auto& a = g.axes;
  fmt::format_to(std::back_inserter(out),
                 "{0}mixed_attention_us:\n{0}  chunk: {1}\n{0}  kv_prefill: {2}\n{0}  decodes: "
                 "{3}\n{0}  kv_per_decode: {4}\n{0}  us:\n",
                 indent, list(a[0]), list(a[1]), list(a[2]), list(a[3]));
  const std::size_t cols = a[3].size();
  for (std::size_t r = 0; r * cols < g.z.size(); ++r) {
    const auto begin = g.z.begin() + static_cast<std::ptrdiff_t>(r * cols);
    const std::vector<double> row(begin, begin + static_cast<std::ptrdiff_t>(cols));
    fmt::format_to(std::back_inserter(out), "{}    - {}\n", indent, list(row));
  }
}

// The optional serving sections, only when set (older profiles keep their bytes).
void write_serving(std::string& out, const Profile& p) {
  auto w = std::back_inserter(out);
  if (p.step_overhead.given()) {
    const StepOverhead& o = p.step_overhead;
    fmt::format_to(w, "step_overhead:\n  fixed_us: {}\n  per_sequence_us: {}\n  per_token_us: {}\n",
                   num(o.fixed_us), num(o.per_sequence_us), num(o.per_token_us));
  }
  if (p.memory.given) {
    const MemorySpec& s = p.memory;
    fmt::format_to(w,
                   "memory:\n  usable_gib: {}\n  weights_extra_bytes: {}\n"
                   "  activation_bytes_per_token: {}\n  sampler_bytes_per_sequence: {}\n"
                   "  non_torch_gib: {}\n  cuda_graph_gib: {}\n",
                   num(s.usable_gib), num(s.weights_extra_bytes), num(s.activation_bytes_per_token),
                   num(s.sampler_bytes_per_sequence), num(s.non_torch_gib), num(s.cuda_graph_gib));
    if (s.sampler_bytes_per_token > 0)  // optional: profiles written before it keep their bytes
      fmt::format_to(w, "  sampler_bytes_per_token: {}\n", num(s.sampler_bytes_per_token));
  }
}

// The model's optional keys, only when given (a dense model's profile keeps its bytes).
void write_model_options(std::string& out, const ModelShape& m) {
  auto w = std::back_inserter(out);
  if (m.active_params > 0) fmt::format_to(w, "  active_params: {}\n", num(m.active_params));
  if (!m.weight_dtype.empty()) fmt::format_to(w, "  weight_dtype: {}\n", scalar(m.weight_dtype));
  if (m.ep > 1) fmt::format_to(w, "  ep: {}\n", m.ep);
  if (m.moe.given())
    fmt::format_to(w,
                   "  moe:\n    experts: {}\n    experts_per_token: {}\n    expert_ffn: {}\n"
                   "    shared_ffn: {}\n    dense_layers: {}\n",
                   m.moe.experts, m.moe.experts_per_token, m.moe.expert_ffn, m.moe.shared_ffn,
                   m.moe.dense_layers);
  if (m.mla.given())
    fmt::format_to(w, "  mla:\n    kv_lora_rank: {}\n    qk_rope_head_dim: {}\n",
                   m.mla.kv_lora_rank, m.mla.qk_rope_head_dim);
  if (m.mla.v_head_dim > 0) fmt::format_to(w, "    v_head_dim: {}\n", m.mla.v_head_dim);
}

std::string to_yaml(const Profile& p) {
  std::string out;
  auto w = std::back_inserter(out);
  fmt::format_to(w, "schema: {}\n", kSchema);
  if (p.provenance.empty()) {
    out += "provenance: {}\n";
  } else {
    out += "provenance:\n";
    for (const auto& [key, value] : p.provenance) {
      fmt::format_to(w, "  {}: {}\n", scalar(key), scalar(value));
    }
  }
  fmt::format_to(w, "device:\n  name: {}\n  memory_gib: {}\n", scalar(p.device.name),
                 num(p.device.memory_gib));
  const ModelShape& m = p.model;
  fmt::format_to(w,
                 "model:\n  name: {}\n  layers: {}\n  hidden: {}\n  heads: {}\n  kv_heads: {}\n"
                 "  head_dim: {}\n  ffn: {}\n  vocab: {}\n  dtype: {}\n  params: {}\n  tp: {}\n",
                 scalar(m.name), m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn,
                 m.vocab, scalar(m.dtype), num(m.params), m.tp);
  write_model_options(out, m);
  fmt::format_to(w, "kv:\n  block_tokens: {}\nsaturation_tokens: {}\nforward:\n", p.block_tokens,
                 p.saturation_tokens);
  if (p.form == ForwardForm::kLinear) {
    fmt::format_to(w, "  linear:\n    base_ms: {}\n    slope_ms_per_token: {}\n",
                   num(p.linear.base_ms), num(p.linear.slope_ms_per_token));
  } else {
    const TablesForward& t = p.tables;
    out += "  tables:\n";
    write_curve(out, "    ", "dense_us", "tokens", "us", t.dense_us);
    write_grid(out, "    ", "decode_attention_us", "sequences", "kv_tokens", t.decode_attention_us);
    write_grid(out, "    ", "prefill_attention_us", "chunk", "kv_tokens", t.prefill_attention_us);
    write_curve(out, "    ", "lm_head_us", "sequences", "us", t.lm_head_us);
    fmt::format_to(w, "    overhead_us: {}\n", num(t.overhead_us));
    if (t.prefill_interpolation != "time")
      fmt::format_to(w, "    prefill_interpolation: {}\n", t.prefill_interpolation);
    if (!t.mixed_attention_us.empty()) write_mixed(out, "    ", t.mixed_attention_us);
    if (!t.allreduce_us.empty())
      write_curve(out, "    ", "allreduce_us", "bytes", "us", t.allreduce_us);
    out += profile_io::write_moe_skew(t, "    ");
  }
  out += "swap:\n";
  write_curve(out, "  ", "h2d", "bytes", "gbps", p.swap.h2d_gbps);
  write_curve(out, "  ", "d2h", "bytes", "gbps", p.swap.d2h_gbps);
  fmt::format_to(w, "  duplex_factor: {}\n  per_copy_overhead_us: {}\n", num(p.swap.duplex_factor),
                 num(p.swap.per_copy_overhead_us));
  if (p.swap.compute_slowdown != 0)
    fmt::format_to(w, "  compute_slowdown: {}\n", num(p.swap.compute_slowdown));
  write_serving(out, p);
  if (!p.validation.empty()) {
    out += "validation:\n";
    for (const ValidationPoint& v : p.validation)
      fmt::format_to(w, "  - batch: {}\n    predicted_ms: {}\n    measured_ms: {}\n",
                     scalar(v.batch), num(v.predicted_ms), num(v.measured_ms));
  }
  return out;
}

std::string bytes_text(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kGiB = kMiB * 1024.0;
  if (bytes >= kGiB) return fmt::format("{:.3g} GiB", bytes / kGiB);
  if (bytes >= kMiB) return fmt::format("{:.3g} MiB", bytes / kMiB);
  if (bytes >= 1024.0) return fmt::format("{:.3g} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

// The bandwidth the cost model uses for one copy of `bytes`: marked when it lies outside the
// measured grid, and when it is the floor the cost model clamps the extrapolation to.
std::string bandwidth_at(const CostModel& cm, Direction dir, int64_t bytes) {
  const CopyBandwidth b = cm.copy_bandwidth(static_cast<double>(bytes), dir);
  if (b.clamped)
    return fmt::format(
        "{:.4g} GB/s (clamped to the slowest measured; the curve extrapolates to "
        "{:.4g})",
        b.gbps, b.curve_gbps);
  return fmt::format("{:.4g} GB/s{}", b.gbps, b.extrapolated ? " (extrapolated)" : "");
}

}  // namespace

void write_profile(std::ostream& os, const Profile& p) {
  os << to_yaml(p);
}

void check_profile_loads(const Profile& p, const std::string& origin) {
  (void)parse_profile(to_yaml(p), origin);
}

void write_profile_file(const std::string& path, const Profile& p) {
  std::ostringstream out;
  write_profile(out, p);
  write_file_atomic(path, out.str());
}

std::string copy_path_name(const Profile& p) {
  return p.provenance_value("backend").starts_with("cpu") ? "host memcpy" : "PCIe";
}

std::string describe_profile(const Profile& p) {
  const CostModel cm(p);
  const ModelShape& m = p.model;
  std::string out;
  auto w = std::back_inserter(out);
  fmt::format_to(w, "profile: {}\n", p.path.empty() ? "(in memory)" : p.path);
  out += "provenance:";
  for (const auto& [key, value] : p.provenance) fmt::format_to(w, " {}={}", key, scalar(value));
  out += "\n";
  fmt::format_to(w, "device: {}, {} GiB\n", p.device.name, num(p.device.memory_gib));
  fmt::format_to(w,
                 "model: {}, {} layers, hidden {}, {} heads ({} KV) x {}, ffn {}, vocab {}, {}, "
                 "{:.4g} params, tp {}\n",
                 m.name, m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab,
                 m.dtype, m.params, m.tp);
  if (m.moe.given())
    fmt::format_to(w,
                   "moe: {} experts, {} per token, expert ffn {}, shared ffn {}, {} dense "
                   "layers; {:.4g} active params per token{}\n",
                   m.moe.experts, m.moe.experts_per_token, m.moe.expert_ffn, m.moe.shared_ffn,
                   m.moe.dense_layers, m.params_per_token(),
                   m.ep > 1 ? fmt::format("; routed experts over ep {}", m.ep) : std::string());
  else if (m.active_params > 0)
    fmt::format_to(w, "active params per token: {:.4g}\n", m.active_params);
  if (m.mla.given())
    fmt::format_to(w,
                   "mla: latent KV kv_lora_rank {} + qk_rope_head_dim {} per layer, the same on "
                   "every tp rank\n",
                   m.mla.kv_lora_rank, m.mla.qk_rope_head_dim);
  const int64_t per_token = m.kv_bytes_per_token();
  const int64_t per_block = per_token * p.block_tokens;
  fmt::format_to(w, "weights: {} per GPU{}\n", bytes_text(m.weight_bytes_per_gpu()),
                 m.weight_dtype.empty() ? std::string()
                                        : " (linear weights " + m.weight_dtype +
                                              ", embedding and lm_head " + m.dtype + ")");
  fmt::format_to(w, "kv: {} bytes per token ({}), {} tokens per block = {} bytes ({})\n", per_token,
                 bytes_text(static_cast<double>(per_token)), p.block_tokens, per_block,
                 bytes_text(static_cast<double>(per_block)));
  if (p.form == ForwardForm::kLinear) {
    fmt::format_to(w, "forward: linear, T(x) = {} ms + {} ms/token * x\n", num(p.linear.base_ms),
                   num(p.linear.slope_ms_per_token));
  } else {
    const TablesForward& t = p.tables;
    fmt::format_to(w,
                   "forward: tables per layer, dense {} points, decode attention {}x{}, prefill "
                   "attention {}x{}, lm_head {} points, overhead {} us\n",
                   t.dense_us.x.size(), t.decode_attention_us.x.size(),
                   t.decode_attention_us.y.size(), t.prefill_attention_us.x.size(),
                   t.prefill_attention_us.y.size(), t.lm_head_us.x.size(), num(t.overhead_us));
    const auto& a = t.mixed_attention_us.axes;
    if (!t.mixed_attention_us.empty())
      fmt::format_to(w,
                     "         mixed attention (one chunk with decodes) {}x{}x{}x{}: chunk {}..{}, "
                     "kv_prefill {}..{}, decodes {}..{}, kv per decode {}..{}\n",
                     a[0].size(), a[1].size(), a[2].size(), a[3].size(), a[0].front(), a[0].back(),
                     a[1].front(), a[1].back(), a[2].front(), a[2].back(), a[3].front(),
                     a[3].back());
    if (!t.allreduce_us.empty()) {
      // Per token: the two all-reduces of every layer at one token and at saturation.
      const double row = static_cast<double>(m.hidden) * m.dtype_bytes();
      const auto big = static_cast<double>(p.saturation_tokens);
      fmt::format_to(w,
                     "         all-reduce {} points ({}..{}): 2 x {} layers x allreduce(tokens x "
                     "{} B) = {:.4g} us at 1 token, {:.4g} us per token at {} tokens\n",
                     t.allreduce_us.x.size(), bytes_text(t.allreduce_us.x.front()),
                     bytes_text(t.allreduce_us.x.back()), m.layers, row,
                     2.0 * m.layers * t.allreduce_us.eval(row),
                     2.0 * m.layers * t.allreduce_us.eval(row * big) / big, big);
    }
    if (!t.moe_us.empty())
      fmt::format_to(w,
                     "         MoE layer (measured) {}x{}: tokens {}..{}, active experts {}..{}\n",
                     t.moe_us.x.size(), t.moe_us.y.size(), t.moe_us.x.front(), t.moe_us.x.back(),
                     t.moe_us.y.front(), t.moe_us.y.back());
    if (t.moe_roofline.given())
      fmt::format_to(w,
                     "         MoE layer (grouped-GEMM roofline): {} TFLOPS x {}, {} GB/s x {}\n",
                     num(t.moe_roofline.peak_tflops), num(t.moe_roofline.compute_efficiency),
                     num(t.moe_roofline.hbm_gbps), num(t.moe_roofline.memory_efficiency));
    if (t.decode_skew.given())
      fmt::format_to(w, "         ragged decode: {} alpha cells, alpha_default {}\n",
                     t.decode_skew.cells.size(), num(t.decode_skew.alpha_default));
  }
  const int64_t s = p.saturation_tokens;
  fmt::format_to(w, "T(1) = {} ms, T({}) = {} ms (saturation), marginal a = {:.6g} ns/token\n",
                 num(static_cast<double>(cm.T(1)) / 1e6), s,
                 num(static_cast<double>(cm.T(s)) / 1e6), cm.marginal_ns_per_token());
  // What Pensieve's eviction weighs: recomputing a 32-token chunk deeper in a context.
  std::string costs;
  for (int64_t pos : {0, 1024, 8192, 32768, 131072})
    costs +=
        (costs.empty() ? "" : ", ") + num(static_cast<double>(cm.recompute_cost(32, pos)) / 1e6);
  fmt::format_to(w, "recompute of a 32-token chunk at position 0, 1K, 8K, 32K, 128K: {} ms\n",
                 costs);
  constexpr int64_t kMiB = int64_t{1} << 20;
  const Direction h2d = Direction::kHostToDevice, d2h = Direction::kDeviceToHost;
  fmt::format_to(w, "swap ({}): h2d {} at 1 MiB, {} at 64 MiB\n", copy_path_name(p),
                 bandwidth_at(cm, h2d, kMiB), bandwidth_at(cm, h2d, 64 * kMiB));
  fmt::format_to(w, "      d2h {} at 1 MiB, {} at 64 MiB\n", bandwidth_at(cm, d2h, kMiB),
                 bandwidth_at(cm, d2h, 64 * kMiB));
  fmt::format_to(w, "      duplex factor {}, per-copy overhead {} us, compute slowdown {}\n",
                 num(p.swap.duplex_factor), num(p.swap.per_copy_overhead_us),
                 num(p.swap.compute_slowdown));
  if (p.step_overhead.given())
    fmt::format_to(w, "step overhead: {} us + {} us per sequence + {} us per token\n",
                   num(p.step_overhead.fixed_us), num(p.step_overhead.per_sequence_us),
                   num(p.step_overhead.per_token_us));
  if (p.memory.given) {
    const MemorySpec& mem = p.memory;
    fmt::format_to(
        w,
        "memory (vLLM rule): usable {} GiB; weights extra {}; activations {} per "
        "token, sampler {} per sequence + {} per token; non-torch {} GiB; CUDA "
        "graphs {} GiB\n",
        num(mem.usable_gib), bytes_text(mem.weights_extra_bytes),
        bytes_text(mem.activation_bytes_per_token), bytes_text(mem.sampler_bytes_per_sequence),
        bytes_text(mem.sampler_bytes_per_token), num(mem.non_torch_gib), num(mem.cuda_graph_gib));
  }
  if (!p.validation.empty()) {
    fmt::format_to(w, "validation: {} batches, mean |error| {:.1f}%\n", p.validation.size(),
                   100 * p.validation_mean_abs_error());
    for (const ValidationPoint& v : p.validation)
      fmt::format_to(w, "  {}: predicted {} ms, measured {} ms, {:+.1f}%\n", v.batch,
                     num(v.predicted_ms), num(v.measured_ms), 100 * v.error());
  }
  return out;
}

}  // namespace isim::sim
