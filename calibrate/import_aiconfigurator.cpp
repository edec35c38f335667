#include "calibrate/import_aiconfigurator.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "calibrate/import_common.h"
#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "sim/profile_check.h"
#include "traces/limits.h"

namespace isim::calib {

namespace {

std::string table_dtype(const std::string& dtype) {
  if (dtype == "bf16") return "bfloat16";
  if (dtype == "fp16") return "float16";
  if (dtype == "fp32") return "float32";
  return dtype;  // fp8
}

// GEMM latency by (m, n, k), in microseconds.
class GemmTable {
 public:
  GemmTable(const std::string& file, const std::string& dtype) : file_(file) {
    const CsvTable t = read_csv(file);
    const std::size_t cd = t.column("gemm_dtype"), cm = t.column("m"), cn = t.column("n"),
                      ck = t.column("k"), cl = t.column("latency");
    std::map<std::pair<double, double>, std::map<double, double>> pts;
    std::set<std::string> dtypes;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      dtypes.insert(t.text(r, cd));
      if (t.text(r, cd) != dtype) continue;
      const double m = t.number(r, cm), n = t.number(r, cn), k = t.number(r, ck),
                   ms = t.number(r, cl);
      if (m <= 0 || n <= 0 || k <= 0 || ms < 0) {
        throw InputError(t.where(r) + ": m, n, k must be > 0 and latency >= 0");
      }
      if (!pts[{n, k}].emplace(m, ms * 1000).second) {
        throw InputError(t.where(r) + ": duplicate row for this (m, n, k, gemm_dtype)");
      }
    }
    if (pts.empty()) {
      std::string list;
      for (const auto& d : dtypes) {
        if (!list.empty()) list += ", ";
        list += d;
      }
      throw InputError(
          fmt::format("{}: gemm_dtype: no rows for {} (present: {})", file, dtype, list));
    }
    std::set<double> ns, ks, ms;
    for (const auto& [nk, by_m] : pts) {
      ns.insert(nk.first);
      ks.insert(nk.second);
      sim::Curve1D& c = curves_[nk];
      for (const auto& [m, us] : by_m) {
        c.x.push_back(m);
        c.y.push_back(us);
        ms.insert(m);
      }
    }
    ns_.assign(ns.begin(), ns.end());
    ks_.assign(ks.begin(), ks.end());
    ms_.assign(ms.begin(), ms.end());
  }

  const std::vector<double>& m_axis() const { return ms_; }

  double eval(double m, double n, double k) const {
    if (n > ns_.back()) {
      const double parts = std::ceil(n / ns_.back());
      return parts * eval(m, n / parts, k);
    }
    if (k > ks_.back()) {
      const double parts = std::ceil(k / ks_.back());
      return parts * eval(m, n, k / parts);
    }
    if (n < ns_.front() || k < ks_.front()) {
      throw InputError(
          fmt::format("{}: n, k: GEMM n={} k={} is below the table's smallest (n={} "
                      "k={})",
                      file_, n, k, ns_.front(), ks_.front()));
    }
    const auto [n0, n1] = bracket(ns_, n);
    const auto [k0, k1] = bracket(ks_, k);
    const double wn = n1 > n0 ? (n - n0) / (n1 - n0) : 0;
    const double wk = k1 > k0 ? (k - k0) / (k1 - k0) : 0;
    auto at = [&](double nn, double kk) {
      auto it = curves_.find({nn, kk});
      if (it == curves_.end()) {
        throw InputError(
            fmt::format("{}: n, k: no rows for n={} k={} (needed for a GEMM of n={} "
                        "k={})",
                        file_, nn, kk, n, k));
      }
      return it->second.eval(m);
    };
    const double lo = (1 - wk) * at(n0, k0) + (wk > 0 ? wk * at(n0, k1) : 0);
    if (wn == 0) return lo;
    const double hi = (1 - wk) * at(n1, k0) + (wk > 0 ? wk * at(n1, k1) : 0);
    return (1 - wn) * lo + wn * hi;
  }

  // How a shape is read from the table, for provenance.
  std::string how(double n, double k) const {
    std::string out;
    if (n > ns_.back()) {
      const double parts = std::ceil(n / ns_.back());
      out += fmt::format("split into {} column blocks of n={}, ", parts, n / parts);
      n /= parts;
    }
    if (k > ks_.back()) {
      const double parts = std::ceil(k / ks_.back());
      out += fmt::format("split into {} reduction blocks of k={}, ", parts, k / parts);
      k /= parts;
    }
    const auto [n0, n1] = bracket(ns_, n);
    const auto [k0, k1] = bracket(ks_, k);
    if (n0 == n1 && k0 == k1) return out + "table shape";
    if (n0 != n1) out += fmt::format("n interpolated between {} and {}", n0, n1);
    if (n0 != n1 && k0 != k1) out += ", ";
    if (k0 != k1) out += fmt::format("k interpolated between {} and {}", k0, k1);
    return out;
  }

 private:
  static std::pair<double, double> bracket(const std::vector<double>& axis, double v) {
    auto hi = std::lower_bound(axis.begin(), axis.end(), v);
    if (*hi == v) return {v, v};
    return {*(hi - 1), *hi};
  }

  std::string file_;
  std::map<std::pair<double, double>, sim::Curve1D> curves_;
  std::vector<double> ns_, ks_, ms_;
};

struct AttentionRows {
  // batch -> (x -> latency us); x is isl + step (generation) or isl (context).
  std::map<int64_t, std::map<double, double>> by_batch;
};

AttentionRows read_attention(const std::string& file, const sim::ModelShape& m,
                             const std::string& kernel, const std::string& dtype, bool generation) {
  const CsvTable t = read_csv(file);
  const std::size_t cs = t.column("kernel_source"), cb = t.column("batch_size"),
                    ci = t.column("isl"), ch = t.column("num_heads"),
                    ckv = t.column("num_key_value_heads"), cd = t.column("head_dim"),
                    cdt = t.column("kv_cache_dtype"), cst = t.column("step"),
                    cw = t.column("window_size"), cl = t.column("latency");
  AttentionRows out;
  std::set<std::tuple<int, int, int>> configs;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.text(r, cs) != kernel || t.text(r, cdt) != dtype || t.number(r, cw) != 0) continue;
    // Shapes and counts are integers (so that no cast below overflows).
    constexpr int64_t kMaxShape = std::numeric_limits<int32_t>::max();
    const int h = static_cast<int>(t.integer(r, ch, 0, kMaxShape)),
              kv = static_cast<int>(t.integer(r, ckv, 0, kMaxShape)),
              d = static_cast<int>(t.integer(r, cd, 0, kMaxShape));
    configs.insert({h, kv, d});
    if (h != m.heads || kv != m.kv_heads || d != m.head_dim) continue;
    const double batch = static_cast<double>(t.integer(r, cb, 1, trace::kMaxTokens)),
                 isl = static_cast<double>(t.integer(r, ci, 1, trace::kMaxTokens)),
                 step = static_cast<double>(t.integer(r, cst, 0, trace::kMaxTokens)),
                 ms = t.number(r, cl);
    if (ms < 0) throw InputError(t.where(r) + ": latency: must be >= 0");
    if (!generation && step != 0) {
      throw InputError(t.where(r) +
                       ": step: context rows with a cached prefix (step != 0) are not understood");
    }
    const double x = generation ? isl + step : isl;
    if (!out.by_batch[static_cast<int64_t>(batch)].emplace(x, ms * 1000).second) {
      throw InputError(t.where(r) + ": duplicate row for this batch and length");
    }
  }
  if (out.by_batch.empty()) {
    std::string list;
    for (const auto& [h, kv, d] : configs) {
      if (!list.empty()) list += ", ";
      list += fmt::format("{}/{}/{}", h, kv, d);
    }
    throw InputError(fmt::format(
        "{}: num_heads/num_key_value_heads/head_dim: no rows for {}/{}/{} (kernel {}, "
        "kv_cache_dtype {}, window_size 0); configs present: {}",
        file, m.heads, m.kv_heads, m.head_dim, kernel, dtype, list.empty() ? "none" : list));
  }
  return out;
}

sim::Curve1D to_curve(const std::map<double, double>& pts) {
  sim::Curve1D c;
  for (const auto& [x, y] : pts) {
    c.x.push_back(x);
    c.y.push_back(y);
  }
  return c;
}

double spec_number(const std::string& file, const YAML::Node& root, const char* section,
                   const char* key) {
  // operator[] on a scalar or a list throws YAML's own error, and a lookup in a map whose keys
  // are not all strings can match one: the maps and their keys are checked first.
  auto checked_map = [&](const YAML::Node& m, const std::string& at) {
    if (!m.IsMap())
      throw InputError(yaml_where(file, m, at.empty() ? "(document)" : at) +
                       ": expected a map, got " + yaml_describe(m));
    for (const auto& kv : m) yaml_key(kv.first, file, at);
  };
  checked_map(root, "");
  const YAML::Node s = root[section];
  if (s) checked_map(s, section);
  const YAML::Node n = s ? s[key] : YAML::Node();
  std::string path = section;
  path += '.';
  path += key;
  if (!n) throw InputError(file + ": " + path + ": missing");
  const double v = read_as<double>(n, file, path, "a positive number");
  if (!(v > 0))
    throw InputError(yaml_where(file, n, path) + ": expected a positive number, got " +
                     yaml_describe(n));
  return v;
}

}  // namespace

double composed_prefill_us(const sim::Curve1D& ctx, const sim::Curve1D& gen, double chunk,
                           double kv) {
  const double alone = ctx.eval(chunk);
  if (kv <= 0) return alone;
  return std::max({alone, ctx.eval(chunk + kv) - ctx.eval(kv), gen.eval(chunk + kv)});
}

sim::Profile import_aiconfigurator(const std::string& dir, const ModelSpec& model,
                                   const AiconfiguratorOptions& opt) {
  const sim::ModelShape& m = model.shape;
  const int tp = opt.tp;
  if (tp < 1 || m.heads % tp != 0 || m.ffn % tp != 0 ||
      (m.kv_heads % tp != 0 && tp % m.kv_heads != 0)) {
    throw InputError(fmt::format(
        "{}: tp {}: heads ({}) and ffn ({}) must divide by tp, and kv_heads ({}) divide by it or "
        "it by kv_heads",
        dir, tp, m.heads, m.ffn, m.kv_heads));
  }
  sim::ModelShape rank = m;  // one rank's attention shard
  rank.heads = m.heads / tp;
  rank.kv_heads = std::max(1, m.kv_heads / tp);
  const std::string dtype = table_dtype(m.dtype);

  // System spec.
  const std::string spec_file = dir + "/" + opt.system + ".yaml";
  const YAML::Node spec = load_yaml_file(spec_file);
  const double mem_bytes = spec_number(spec_file, spec, "gpu", "mem_capacity");
  const double pcie_nominal = spec_number(spec_file, spec, "node", "pcie_bw");

  // GEMMs.
  const GemmTable gemm(dir + "/gemm_perf.csv", dtype);
  const double hidden = m.hidden, hd = m.head_dim;
  const double qkv_n = (rank.heads + 2.0 * rank.kv_heads) * hd, o_k = rank.heads * hd,
               gu_n = 2.0 * m.ffn / tp, ffn = static_cast<double>(m.ffn) / tp,
               vocab = std::ceil(static_cast<double>(m.vocab) / tp);
  sim::Profile p;
  sim::TablesForward& t = p.tables;
  for (const double tokens : gemm.m_axis()) {
    const double us = gemm.eval(tokens, qkv_n, hidden) + gemm.eval(tokens, hidden, o_k) +
                      gemm.eval(tokens, gu_n, hidden) + gemm.eval(tokens, hidden, ffn);
    t.dense_us.x.push_back(tokens);
    t.dense_us.y.push_back(round_us(us));
  }

  // Attention.
  const std::string gen_file = dir + "/generation_attention_perf.csv";
  const std::string ctx_file = dir + "/context_attention_perf.csv";
  const AttentionRows gen = read_attention(gen_file, rank, opt.kernel, dtype, true);
  const AttentionRows ctx = read_attention(ctx_file, rank, opt.kernel, dtype, false);
  std::map<int64_t, sim::Curve1D> dec_rows;
  for (const auto& [b, pts] : gen.by_batch) dec_rows[b] = to_curve(pts);
  GridFill dec_fill;
  t.decode_attention_us = decode_grid(dec_rows, &dec_fill);
  const double max_batch = static_cast<double>(gen.by_batch.rbegin()->first);
  for (const double s : gemm.m_axis()) {
    if (s > max_batch) break;
    t.lm_head_us.x.push_back(s);
    t.lm_head_us.y.push_back(round_us(gemm.eval(s, vocab, hidden)));
  }
  if (t.lm_head_us.x.empty())
    throw InputError(fmt::format(
        "{}/gemm_perf.csv: m: no rows at m <= {} (the largest batch_size of {}), needed for "
        "lm_head; the smallest m is {}",
        dir, max_batch, gen_file, gemm.m_axis().front()));

  auto ctx1 = ctx.by_batch.find(1);
  auto gen1 = gen.by_batch.find(1);
  if (ctx1 == ctx.by_batch.end() || ctx1->second.size() < 2) {
    throw InputError(ctx_file + ": batch_size: needs at least two batch-1 rows for this config");
  }
  if (gen1 == gen.by_batch.end()) {
    throw InputError(gen_file + ": batch_size: needs batch-1 rows for this config");
  }
  const sim::Curve1D tctx = to_curve(ctx1->second);
  const sim::Curve1D tgen = to_curve(gen1->second);
  const double half = tctx.x.back() / 2;
  t.prefill_attention_us.y.push_back(0);
  for (const double isl : tctx.x) {
    if (isl > half) break;
    t.prefill_attention_us.x.push_back(isl);
    t.prefill_attention_us.y.push_back(isl);
  }
  GridFill pre_fill;
  for (const double c : t.prefill_attention_us.x) {
    for (const double kv : t.prefill_attention_us.y) {
      eval_counted(tctx, c, &pre_fill);
      if (kv > 0) {
        eval_counted(tctx, c + kv, &pre_fill);
        eval_counted(tgen, c + kv, &pre_fill);
      }
      t.prefill_attention_us.z.push_back(round_us(composed_prefill_us(tctx, tgen, c, kv)));
    }
  }
  t.overhead_us = 0;
  AllreduceCurve allreduce;
  if (tp > 1) {
    allreduce = aiconfigurator_allreduce(dir, tp, m.dtype, opt.allreduce);
    t.allreduce_us = allreduce.us;
  }

  std::string device = opt.system;
  for (char& ch : device) ch = ch == '_' ? '-' : static_cast<char>(std::toupper(ch));
  p.device.name = device;
  p.device.memory_gib = mem_bytes / (1024.0 * 1024.0 * 1024.0);
  p.model = m;
  p.model.tp = tp;
  p.block_tokens = 16;
  p.saturation_tokens = saturation_from_dense(t.dense_us, dir + "/gemm_perf.csv");
  p.form = sim::ForwardForm::kTables;
  p.swap = assumed_pcie(opt.pcie_gbps, 0.8, 3);

  auto& pv = p.provenance;
  pv.emplace_back("source", "imported");
  pv.emplace_back("importer", "isim profile import --from aiconfigurator");
  pv.emplace_back("repository", "ai-dynamo/aiconfigurator");
  pv.emplace_back("commit", "095f58a5");
  pv.emplace_back("license", "Apache-2.0");
  pv.emplace_back("data_dir", dir);
  pv.emplace_back("device", device);
  pv.emplace_back("measured_with",
                  fmt::format("vLLM 0.24; GEMM torch.nn.functional.linear {}; attention {}", dtype,
                              opt.kernel));
  pv.emplace_back("model_config", model.source);
  pv.emplace_back(
      "gemm_rule",
      "exact at table points, bilinear in (n, k) between axis values, piecewise linear in m; a "
      "GEMM wider (deeper) than the table is split into equal column (reduction) blocks whose "
      "times add");
  pv.emplace_back(
      "dense_rule",
      fmt::format("per decoder layer at every m of gemm_perf.csv: QKV (n={}, k={}: "
                  "{}) + O (n={}, k={}: {}) + gate+up (n={}, k={}: {}) + down (n={}, "
                  "k={}: {}); element-wise ops are not in the tables and not counted",
                  qkv_n, hidden, gemm.how(qkv_n, hidden), hidden, o_k, gemm.how(hidden, o_k), gu_n,
                  hidden, gemm.how(gu_n, hidden), hidden, ffn, gemm.how(hidden, ffn)));
  pv.emplace_back("lm_head_rule",
                  fmt::format("GEMM m=sequences, n={}, k={} ({}), sequences up to the largest "
                              "decode batch {}",
                              vocab, hidden, gemm.how(vocab, hidden), max_batch));
  pv.emplace_back(
      "decode_attention_rule",
      fmt::format("generation_attention_perf.csv rows for {}/{}/{} heads/kv_heads/head_dim, "
                  "window 0, KV per sequence = isl + step, as a grid over (batch, total KV = "
                  "batch x KV per sequence); the total axis is every measured product and each "
                  "batch row is read at total / batch along its measured KV (piecewise linear, "
                  "linear extrapolation from the two nearest points outside it); cells: {}",
                  rank.heads, rank.kv_heads, m.head_dim, dec_fill.text()));
  pv.emplace_back(
      "prefill_attention_rule",
      fmt::format("from batch-1 context rows T_ctx(isl) (no cached prefix) and batch-1 "
                  "generation rows T_gen(kv): T(c, 0) = T_ctx(c); T(c, p) = max(T_ctx(c), "
                  "T_ctx(c + p) - T_ctx(p), T_gen(c + p)), the last c query rows of a causal "
                  "prefill of c + p tokens, never below the chunk alone nor one read of the KV; "
                  "axes: isl values up to {}; lookups: {}",
                  half, pre_fill.text()));
  if (tp > 1) {
    pv.emplace_back(
        "tensor_parallel",
        fmt::format("tp {}: every GEMM and attention shape is one rank's shard ({} heads, {} kv "
                    "heads, ffn / {}, vocab / {}); the all-reduces are costed from allreduce_us",
                    tp, rank.heads, rank.kv_heads, tp, tp));
    pv.emplace_back("allreduce_rule", allreduce.rule);
  }
  pv.emplace_back("overhead_rule", "0: the tables have no per-iteration CPU measurement");
  pv.emplace_back("block_tokens_rule", "16, vLLM's default block size (the tables have none)");
  pv.emplace_back(
      "saturation_rule",
      "knee of dense_us: on the octave ladder x_max/2, x_max/4, ..., the smallest x from which "
      "the doubling marginal cost (T(2x) - T(x)) / x stays within 15% of its value at "
      "x_max/2");
  pv.emplace_back(
      "device_assumptions",
      fmt::format("memory = {}.yaml gpu.mem_capacity ({} bytes); swap {} GB/s each way (PCIe "
                  "Gen5 x16 with pinned memory per ../shared/data/README.md; the spec's "
                  "node.pcie_bw is the nominal {} GB/s), duplex 0.8 (mild end of the 18-50% "
                  "loss), 3 us per copy (2-4 us per cudaMemcpyAsync)",
                  opt.system, mem_bytes, opt.pcie_gbps, pcie_nominal / 1e9));
  // Times past an hour (or extrapolated there), a KV block past 2 GiB: refused here, naming the
  // folder, instead of written into a profile that does not load.
  sim::check_profile_loads(p, "the profile imported from " + dir);
  return p;
}

}  // namespace isim::calib
