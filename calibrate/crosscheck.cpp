// The roofline against aiconfigurator's measured tables; see calibrate/crosscheck.h.
#include "calibrate/crosscheck.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "calibrate/import_aiconfigurator.h"
#include "calibrate/import_common.h"

namespace isim::calib {

namespace {

struct Shape {
  std::string name;
  double n = 0, k = 0;
};

// One GPU's projection GEMMs (crosscheck.h), each (n, k) once.
std::vector<Shape> projection_shapes(const sim::ModelShape& m) {
  const double tp = m.tp, h = m.hidden;
  std::vector<Shape> all;
  if (m.mla.given()) {
    const double v = m.mla.value_head_dim(m.head_dim);
    const double nope = m.head_dim - m.mla.qk_rope_head_dim;
    all.push_back({"kv_a", static_cast<double>(m.mla.kv_lora_rank) + m.mla.qk_rope_head_dim, h});
    all.push_back({"kv_b", m.heads * (nope + v) / tp, static_cast<double>(m.mla.kv_lora_rank)});
    all.push_back({"o", h, m.heads * v / tp});
  } else {
    all.push_back({"qkv", (m.heads + 2.0 * m.kv_heads) * m.head_dim / tp, h});
    all.push_back({"o", h, static_cast<double>(m.heads) * m.head_dim / tp});
  }
  if (!m.moe.given() || m.moe.dense_layers > 0) {
    all.push_back({"gate_up", 2.0 * m.ffn / tp, h});
    all.push_back({"down", h, m.ffn / tp});
  }
  if (m.moe.given()) {
    const double split = m.ep > 1 ? 1 : tp;  // whole experts on an EP rank
    all.push_back({"expert gate_up", 2.0 * m.moe.expert_ffn / split, h});
    all.push_back({"expert down", h, m.moe.expert_ffn / split});
    if (m.moe.shared_ffn > 0) {
      all.push_back({"shared gate_up", 2.0 * m.moe.shared_ffn / tp, h});
      all.push_back({"shared down", h, m.moe.shared_ffn / tp});
    }
  }
  all.push_back({"lm_head", m.vocab / tp, h});
  std::vector<Shape> out;
  std::set<std::pair<double, double>> seen;
  for (const Shape& s : all)
    if (seen.insert({s.n, s.k}).second) out.push_back(s);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

CrossCheckClass summarize(std::string kernel, const std::vector<double>& errors, std::string note) {
  CrossCheckClass c;
  c.kernel = std::move(kernel);
  c.note = std::move(note);
  c.points = static_cast<int>(errors.size());
  if (errors.empty()) return c;
  std::vector<double> abs;
  for (double e : errors) abs.push_back(std::abs(e));
  c.median_abs_error = median(abs);
  c.max_abs_error = *std::max_element(abs.begin(), abs.end());
  c.median_error = median(errors);
  return c;
}

double error(double predicted_us, double measured_ms) {
  return predicted_us / (measured_ms * 1000) - 1;
}

void check_gemms(const std::string& dir, const Roofline& r, const sim::ModelShape& m,
                 std::vector<CrossCheckClass>& out) {
  const CsvTable t = read_csv(dir + "/gemm_perf.csv");
  const size_t cd = t.column("gemm_dtype"), cm = t.column("m"), cn = t.column("n"),
               ck = t.column("k"), cl = t.column("latency");
  std::map<std::pair<double, double>, std::map<double, double>> rows;  // (n, k) -> m -> ms
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (t.text(i, cd) == "bfloat16")
      rows[{t.number(i, cn), t.number(i, ck)}][t.number(i, cm)] = t.number(i, cl);
  std::vector<double> compute, memory;
  std::string found, absent;
  for (const Shape& s : projection_shapes(m)) {
    const std::string label = fmt::format("{} {}x{}", s.name, s.n, s.k);
    const auto it = rows.find({s.n, s.k});
    if (it == rows.end()) {
      absent += (absent.empty() ? "" : ", ") + label;
      continue;
    }
    found += (found.empty() ? "" : ", ") + label;
    std::set<double> used;
    for (double want : {1, 8, 32, 128, 512, 2048, 8192}) {
      double best = 0, gap = std::numeric_limits<double>::infinity();
      for (const auto& [mm, ms] : it->second)
        if (std::abs(std::log(mm / want)) < gap) {
          gap = std::abs(std::log(mm / want));
          best = mm;
        }
      if (!used.insert(best).second) continue;
      bool on_compute = false;
      const double us = r.gemm_bf16_us(best, s.n, s.k, &on_compute);
      (on_compute ? compute : memory).push_back(error(us, it->second.at(best)));
    }
  }
  const std::string note = fmt::format("n x k: {}{}", found.empty() ? "none in the table" : found,
                                       absent.empty() ? "" : "; no rows for " + absent);
  out.push_back(summarize("gemm bf16 (memory side)", memory, note));
  out.push_back(summarize("gemm bf16 (compute side)", compute, "the same shapes"));
}

// Rows of one attention table whose config is this GPU's share of the model's heads.
void check_attention(const std::string& file, const Roofline& r, const sim::ModelShape& m,
                     bool generation, std::vector<CrossCheckClass>& out) {
  const std::string kernel = generation ? "generation attention" : "context attention";
  if (m.mla.given()) {
    out.push_back(
        summarize(kernel, {}, "MLA: the tables have no MLA rows (their FA3 rows are MHA/GQA)"));
    return;
  }
  const int heads = m.heads / m.tp, kv_heads = std::max(1, m.kv_heads / m.tp);
  const CsvTable t = read_csv(file);
  const size_t cs = t.column("kernel_source"), cb = t.column("batch_size"), ci = t.column("isl"),
               ch = t.column("num_heads"), ckv = t.column("num_key_value_heads"),
               cd = t.column("head_dim"), cdt = t.column("kv_cache_dtype"), cst = t.column("step"),
               cw = t.column("window_size"), cl = t.column("latency");
  std::vector<double> errors;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    if (t.text(i, cs) != "vllm_flash_attn_fa3" || t.text(i, cdt) != "bfloat16" ||
        t.number(i, cw) != 0 || t.number(i, ch) != heads || t.number(i, ckv) != kv_heads ||
        t.number(i, cd) != m.head_dim)
      continue;
    const double b = t.number(i, cb), isl = t.number(i, ci), step = t.number(i, cst);
    if (!generation && step != 0) continue;
    const double us = generation ? r.decode_attention_us(b, b * (isl + step))
                                 : b * r.prefill_attention_us(isl, 0);
    errors.push_back(error(us, t.number(i, cl)));
  }
  out.push_back(summarize(kernel, errors,
                          fmt::format("fa3 rows of {}/{}/{} (heads/kv heads/head dim per GPU)",
                                      heads, kv_heads, m.head_dim)));
}

double nccl_dtype_bytes(const std::string& d) {
  if (d == "half" || d == "bfloat16" || d == "float16") return 2;
  if (d == "int8" || d == "fp8" || d == "uint8") return 1;
  if (d == "float" || d == "float32") return 4;
  return 0;
}

void check_alltoall(const std::string& dir, const Roofline& r, const GpuSpec& gpu,
                    std::vector<CrossCheckClass>& out) {
  const CsvTable t = read_csv(aiconfigurator_nccl_file(dir, "the all-to-all cross-check"));
  const size_t co = t.column("op_name"), cd = t.column("nccl_dtype"), cg = t.column("num_gpus"),
               cs = t.column("message_size"), cl = t.column("latency");
  std::map<int64_t, std::vector<double>> by_ranks;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const double bytes = nccl_dtype_bytes(t.text(i, cd));
    if (t.text(i, co) != "alltoall" || bytes == 0) continue;
    const int64_t ranks = t.integer(i, cg, 1, 1 << 20);
    if (ranks != 2 && ranks != 4 && ranks != 8) continue;
    const double us = r.alltoall_us(t.number(i, cs) * bytes, static_cast<int>(ranks));
    by_ranks[ranks].push_back(error(us, t.number(i, cl)));
  }
  const double link = gpu.nvlink_gbps > 0 ? gpu.nvlink_gbps : gpu.pcie_gbps;
  for (const auto& [ranks, errors] : by_ranks)
    out.push_back(
        summarize(fmt::format("alltoall {} GPUs", ranks), errors,
                  fmt::format("nccl rows; latency + (R-1)/R x bytes / ({} GB/s x link)", link)));
  if (by_ranks.empty()) out.push_back(summarize("alltoall", {}, "no alltoall rows"));
}

}  // namespace

CrossCheck cross_check_aiconfigurator(const std::string& dir, const GpuSpec& gpu,
                                      const sim::ModelShape& model, const Efficiency& eff) {
  const Roofline r(gpu, model, eff);
  CrossCheck c{dir, model.name, gpu.name, {}};
  check_gemms(dir, r, model, c.classes);
  check_attention(dir + "/generation_attention_perf.csv", r, model, true, c.classes);
  check_attention(dir + "/context_attention_perf.csv", r, model, false, c.classes);
  check_alltoall(dir, r, gpu, c.classes);
  return c;
}

std::string cross_check_text(const CrossCheck& c) {
  std::string out = fmt::format(
      "cross-check of the roofline ({} on {}) against {} (error = roofline / measured - 1):\n",
      c.model, c.gpu, c.dir);
  out += fmt::format("  {:<26} {:>6} {:>10} {:>10} {:>10}  {}\n", "kernel class", "points",
                     "median|e|", "max|e|", "median e", "compared");
  for (const CrossCheckClass& k : c.classes) {
    if (k.points == 0) {
      out += fmt::format("  {:<26} {:>6} {:>10} {:>10} {:>10}  {}\n", k.kernel, 0, "-", "-", "-",
                         k.note);
      continue;
    }
    out +=
        fmt::format("  {:<26} {:>6} {:>9.1f}% {:>9.1f}% {:>+9.1f}%  {}\n", k.kernel, k.points,
                    100 * k.median_abs_error, 100 * k.max_abs_error, 100 * k.median_error, k.note);
  }
  return out;
}

}  // namespace isim::calib
