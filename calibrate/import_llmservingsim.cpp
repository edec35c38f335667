#include "calibrate/import_llmservingsim.h"

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "calibrate/import_aiconfigurator.h"
#include "calibrate/import_common.h"
#include "calibrate/import_llmservingsim_parts.h"
#include "calibrate/vllm_memory.h"
#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "sim/cost_moe.h"
#include "sim/profile_check.h"
#include "traces/limits.h"

namespace isim::calib {

namespace {

// op -> (tokens -> time) from a CSV with columns layer, <xcol>, time_us.
std::map<std::string, std::map<int64_t, double>> read_ops(const std::string& file,
                                                          const std::string& xcol,
                                                          const std::set<std::string>& known) {
  const CsvTable t = read_csv(file);
  const std::size_t cl = t.column("layer"), cx = t.column(xcol), ct = t.column("time_us");
  std::map<std::string, std::map<int64_t, double>> ops;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& op = t.text(r, cl);
    if (!known.count(op)) {
      std::string list;
      for (const auto& k : known) {
        if (!list.empty()) list += ", ";
        list += k;
      }
      throw InputError(fmt::format("{}: layer: unknown op '{}' (known: {})", t.where(r), op, list));
    }
    const int64_t x = t.integer(r, cx, 1, trace::kMaxTokens);
    const double us = t.number(r, ct);
    if (us < 0) throw InputError(fmt::format("{}: time_us: negative ({})", t.where(r), us));
    if (!ops[op].emplace(x, us).second) {
      throw InputError(fmt::format("{}: {}: duplicate row for {} = {}", t.where(r), xcol, op, x));
    }
  }
  return ops;
}

const std::map<int64_t, double>& op_rows(
    const std::map<std::string, std::map<int64_t, double>>& ops, const std::string& file,
    const std::string& op) {
  auto it = ops.find(op);
  if (it == ops.end()) throw InputError(fmt::format("{}: layer: no rows for '{}'", file, op));
  return it->second;
}

sim::Curve1D weighted_sum(const std::map<std::string, std::map<int64_t, double>>& ops,
                          const std::string& file, const std::string& xcol,
                          const std::vector<std::pair<std::string, double>>& terms) {
  const auto& axis = op_rows(ops, file, terms.front().first);
  sim::Curve1D c;
  for (const auto& [x, unused] : axis) {
    (void)unused;
    double sum = 0;
    for (const auto& [op, weight] : terms) {
      const auto& rows = op_rows(ops, file, op);
      auto it = rows.find(x);
      if (it == rows.end() || rows.size() != axis.size()) {
        throw InputError(
            fmt::format("{}: {}: op '{}' does not list the same {} values as '{}' "
                        "(first difference near {})",
                        file, xcol, op, xcol, terms.front().first, x));
      }
      sum += weight * it->second;
    }
    c.x.push_back(static_cast<double>(x));
    c.y.push_back(round_us(sum));
  }
  return c;
}

}  // namespace

namespace {

// A MoE model's layer is dense_us plus, in its MoE layers, the MoE block (moe_us at the
// expected distinct experts, or the roofline): the knee is read on that sum, per layer, at
// dense_us's points, so that saturation_tokens reflects the experts a batch activates.
void moe_saturation(sim::Profile& p, const std::string& dense_file) {
  const sim::ModelShape& m = p.model;
  const double share = static_cast<double>(m.moe.moe_layers(m.layers)) / m.layers;
  sim::Curve1D layer = p.tables.dense_us;
  for (std::size_t i = 0; i < layer.x.size(); ++i) {
    bool outside = false;
    layer.y[i] += share * sim::moe_layer_us(m, p.tables, layer.x[i], &outside);
  }
  p.saturation_tokens = saturation_from_dense(layer, dense_file + " with the MoE layers");
  for (auto& [key, value] : p.provenance)
    if (key == "saturation_rule")
      value = fmt::format(
          "knee of dense_us + {}/{} of the MoE layer (its layers' share) at dense_us's points: on "
          "the octave ladder x_max/2, x_max/4, ..., the smallest x from which the doubling "
          "marginal cost (T(2x) - T(x)) / x stays within 15% of its value at x_max/2",
          m.moe.moe_layers(m.layers), m.layers);
}

}  // namespace

sim::Profile import_llmservingsim(const std::string& dir, const ModelSpec& model,
                                  const LlmServingSimOptions& opt) {
  const sim::ModelShape& m = model.shape;
  const int tp = opt.tp;
  const std::string meta_file = dir + "/meta.yaml";
  const lss::Meta meta = lss::read_meta(meta_file, m);
  std::string degrees;
  bool listed = false;
  for (const int t : meta.tp_degrees) {
    listed = listed || t == tp;
    degrees += (degrees.empty() ? "" : ", ") + std::to_string(t);
  }
  if (!listed)
    throw InputError(
        fmt::format("{}: tp {}: only tp {} in {} tp_degrees (the degrees these "
                    "tables were profiled at)",
                    dir, tp, degrees, meta_file));
  for (const auto& [what, v] : {std::pair<const char*, int>{"heads", m.heads},
                                {"kv_heads", m.kv_heads},
                                {"ffn", m.ffn},
                                {"vocab", m.vocab}})
    if (v % tp != 0)
      throw InputError(fmt::format("{}: tp {}: model {} {} = {} does not divide by it", dir, tp,
                                   m.name, what, v));

  if (!m.moe.given() && std::filesystem::exists(dir + "/moe.csv"))
    throw InputError(
        fmt::format("{}/moe.csv: model {} has no experts (a MoE table for a dense "
                    "model: is --model the folder's model?)",
                    dir, m.name));

  // Dense ops, per decoder layer. A MoE model's MoE block replaces the FFN (moe.csv), so its
  // dense.csv has no FFN ops; the FFN of leading dense layers is spread over all layers.
  const std::string dense_file = dir + "/dense.csv";
  const auto dense_ops =
      read_ops(dense_file, "tokens",
               {"act_fn", "down_proj", "embedding", "final_layernorm", "gate_up_proj", "layernorm",
                "o_proj", "qk_norm", "qkv_proj", "rotary_emb"});
  const double per_layer = 1.0 / m.layers;
  const double ffn_share = m.moe.given() ? static_cast<double>(m.moe.dense_layers) / m.layers : 1.0;
  std::vector<std::pair<std::string, double>> dense_terms = {
      {"qkv_proj", 1}, {"layernorm", 2}, {"rotary_emb", 1}, {"o_proj", 1}};
  if (dense_ops.count("qk_norm")) dense_terms.emplace_back("qk_norm", 1);
  if (ffn_share > 0)
    for (const char* op : {"gate_up_proj", "act_fn", "down_proj"})
      dense_terms.emplace_back(op, ffn_share);
  dense_terms.emplace_back("embedding", per_layer);
  dense_terms.emplace_back("final_layernorm", per_layer);
  sim::Profile p;
  sim::TablesForward& t = p.tables;
  t.dense_us = weighted_sum(dense_ops, dense_file, "tokens", dense_terms);
  std::string dense_rule = "per decoder layer: 2 x layernorm + qkv_proj + rotary_emb + o_proj";
  if (dense_ops.count("qk_norm")) dense_rule += " + qk_norm (q and k norms, one op)";
  if (!m.moe.given())
    dense_rule += " + gate_up_proj + act_fn + down_proj";
  else if (ffn_share > 0)
    dense_rule += fmt::format(
        " + (gate_up_proj + act_fn + down_proj) x {} / {} (the dense "
        "layers' FFN spread over all layers)",
        m.moe.dense_layers, m.layers);
  else
    dense_rule += " (every layer's FFN is the MoE block, priced apart)";
  dense_rule += " from dense.csv, plus (embedding + final_layernorm) / layers; rounded to 1 ns";

  const std::string seq_file = dir + "/per_sequence.csv";
  const auto seq_ops = read_ops(seq_file, "sequences", {"lm_head", "sampler"});
  const sim::Curve1D lm_head_only = weighted_sum(seq_ops, seq_file, "sequences", {{"lm_head", 1}});
  std::vector<std::pair<std::string, double>> head_terms = {{"lm_head", 1}};
  if (seq_ops.count("sampler")) head_terms.emplace_back("sampler", 1);
  t.lm_head_us = weighted_sum(seq_ops, seq_file, "sequences", head_terms);

  // Attention.
  const std::string att_file = dir + "/attention.csv";
  const CsvTable att = read_csv(att_file);
  const std::size_t cc = att.column("prefill_chunk"), ckp = att.column("kv_prefill"),
                    cn = att.column("n_decode"), ckd = att.column("kv_decode"),
                    ct = att.column("time_us");
  std::map<int64_t, std::map<double, double>> dec, pre;
  std::map<std::array<double, 4>, double> mixed;  // (chunk, kv_prefill, n, kv per decode)
  int64_t empty = 0;
  for (std::size_t r = 0; r < att.rows.size(); ++r) {
    // Token and sequence counts: integers, so that the casts below cannot overflow.
    for (const std::size_t c : {cc, ckp, cn, ckd}) att.integer(r, c, 0, trace::kMaxTokens);
    const double chunk = att.number(r, cc), kvp = att.number(r, ckp), n = att.number(r, cn),
                 kvd = att.number(r, ckd), us = att.number(r, ct);
    if (us < 0) throw InputError(att.where(r) + ": negative value");
    bool fresh = true;
    if (chunk == 0 && n > 0) {
      if (kvp != 0) throw InputError(att.where(r) + ": kv_prefill: nonzero without a chunk");
      if (kvd <= 0) throw InputError(att.where(r) + ": kv_decode: must be > 0 for decodes");
      fresh = dec[static_cast<int64_t>(n)].emplace(kvd, us).second;
    } else if (n == 0 && chunk > 0) {
      if (kvd != 0) throw InputError(att.where(r) + ": kv_decode: nonzero without decodes");
      fresh = pre[static_cast<int64_t>(chunk)].emplace(kvp, us).second;
    } else if (n > 0 && chunk > 0) {
      if (kvd <= 0) throw InputError(att.where(r) + ": kv_decode: must be > 0 for decodes");
      fresh = mixed.emplace(std::array<double, 4>{chunk, kvp, n, kvd}, us).second;
    } else {
      ++empty;
    }
    if (!fresh) throw InputError(att.where(r) + ": duplicate measurement");
  }
  if (dec.empty()) throw InputError(att_file + ": n_decode: no pure-decode rows (prefill_chunk 0)");
  if (pre.empty())
    throw InputError(att_file + ": prefill_chunk: no pure-prefill rows (n_decode 0)");
  std::map<int64_t, sim::Curve1D> dec_rows;
  for (const auto& [n, pts] : dec) {
    sim::Curve1D& c = dec_rows[n];
    for (const auto& [kv, us] : pts) {
      c.x.push_back(kv);
      c.y.push_back(us);
    }
  }
  GridFill dec_fill;
  t.decode_attention_us = decode_grid(dec_rows, &dec_fill);

  GridFill pre_fill;
  std::set<double> kvs;
  for (const auto& [chunk, pts] : pre) {
    t.prefill_attention_us.x.push_back(static_cast<double>(chunk));
    for (const auto& [kv, us] : pts) kvs.insert(kv);
  }
  t.prefill_attention_us.y.assign(kvs.begin(), kvs.end());
  for (const auto& [chunk, pts] : pre) {
    sim::Curve1D row;
    for (const auto& [kv, us] : pts) {
      row.x.push_back(kv);
      row.y.push_back(us);
    }
    for (const double kv : t.prefill_attention_us.y) {
      t.prefill_attention_us.z.push_back(round_us(eval_counted(row, kv, &pre_fill)));
    }
  }
  GridFill mixed_fill;
  if (!mixed.empty()) {
    check_grid4_cells(mixed, att_file + ": rows with prefill_chunk > 0 and n_decode > 0");
    t.mixed_attention_us = fill_grid4(mixed, &mixed_fill);
  }
  t.overhead_us = 0;

  // Device.
  double memory = opt.memory_gib, pcie = opt.pcie_gbps;
  std::string pcie_text = "given on the command line";
  const lss::KnownHardware* known = lss::find_hardware(meta.hardware);
  if ((memory <= 0 || pcie <= 0) && known == nullptr) {
    std::string list;
    for (const auto& h : lss::known_hardware())
      list += (list.empty() ? "" : ", ") + std::string(h.id);
    throw InputError(
        fmt::format("{}: hardware: unknown '{}' (known: {}); give --memory-gib and "
                    "--pcie-gbps",
                    meta_file, meta.hardware, list));
  }
  if (memory <= 0) memory = known->memory_gib;
  if (pcie <= 0) {
    pcie = known->pcie_gbps;
    pcie_text = known->pcie;
    pcie_text += " with pinned host memory (../shared/data/README.md)";
  }

  p.device.name = meta.gpu;
  p.device.memory_gib = memory;
  p.model = m;
  p.model.tp = tp;
  p.block_tokens = meta.block_tokens;
  p.saturation_tokens = saturation_from_dense(t.dense_us, dense_file);
  p.form = sim::ForwardForm::kTables;
  // Both directions at once lose 18-50% on one side (data README): 0.8 takes the mild end; one
  // cudaMemcpyAsync per small block costs about 2-4 us: 3 us.
  p.swap = assumed_pcie(pcie, 0.8, 3);

  auto& pv = p.provenance;
  pv.emplace_back("source", "imported");
  pv.emplace_back("importer", "isim profile import --from llmservingsim");
  pv.emplace_back("repository", "casys-kaist/LLMServingSim");
  pv.emplace_back("commit", "5daddb21");
  pv.emplace_back("license", "MIT");
  pv.emplace_back("perf_dir", dir);
  pv.emplace_back("device", meta.gpu);
  pv.emplace_back("measured_with", fmt::format("vLLM {}, CUDA {}, profiled at {}, {}", meta.vllm,
                                               meta.cuda, meta.profiled_at, meta.hf_model));
  pv.emplace_back("model_config", model.source);
  pv.emplace_back("dense_rule", dense_rule);
  pv.emplace_back("lm_head_rule", seq_ops.count("sampler") ? "lm_head + sampler by sequences"
                                                           : "lm_head by sequences");
  pv.emplace_back(
      "decode_attention_rule",
      fmt::format("attention.csv rows with prefill_chunk 0 (kv_decode is per sequence) as a grid "
                  "over (n_decode, total KV = n_decode x kv_decode); the total axis is every "
                  "measured product and each row is read at total / n along its measured kv "
                  "(piecewise linear, linear extrapolation from the two nearest points outside "
                  "it); cells: {}",
                  dec_fill.text()));
  pv.emplace_back(
      "prefill_attention_rule",
      fmt::format("attention.csv rows with n_decode 0 over (prefill_chunk, kv_prefill); axes are "
                  "the union of measured values, a missing point is interpolated along kv_prefill "
                  "within its chunk row; cells: {}",
                  pre_fill.text()));
  if (!mixed.empty())
    pv.emplace_back(
        "mixed_attention_rule",
        fmt::format("attention.csv rows with prefill_chunk > 0 and n_decode > 0 ({} rows: one "
                    "chunk and n decodes in one kernel) as a grid over (prefill_chunk, "
                    "kv_prefill, n_decode, kv_decode per sequence); axes are the union of "
                    "measured values; a missing cell is interpolated linearly along kv_decode, "
                    "then kv_prefill, then chunk, then n_decode between the nearest known cells, "
                    "repeated; only cells outside every known range are extrapolated linearly "
                    "from the two nearest along the same order (clamped at 0); cells: {}",
                    mixed.size(), mixed_fill.text()));
  pv.emplace_back("overhead_rule", "0: the perf directory has no per-iteration CPU measurement");
  pv.emplace_back(
      "saturation_rule",
      "knee of dense_us: on the octave ladder x_max/2, x_max/4, ..., the smallest x from which "
      "the doubling marginal cost (T(2x) - T(x)) / x stays within 15% of its value at "
      "x_max/2");
  pv.emplace_back("device_assumptions",
                  fmt::format("memory {} GiB (nominal); swap {} GB/s each way ({}), duplex 0.8 "
                              "(mild end of the 18-50% loss), 3 us per copy (2-4 us per "
                              "cudaMemcpyAsync)",
                              memory, pcie, pcie_text));
  const double usable =
      known != nullptr && opt.memory_gib <= 0 ? known->usable_bytes : memory * 1073741824.0;
  std::string memory_rule;
  p.memory = vllm_memory(model, usable, tp, &memory_rule);
  pv.emplace_back("memory_usable", known != nullptr && opt.memory_gib <= 0
                                       ? std::string(known->usable)
                                       : "the --memory-gib given, taken as all usable");
  pv.emplace_back("memory_rule", memory_rule);
  if (!meta.note.empty()) pv.emplace_back("note", meta.note);
  lss::add_tp_moe_skew(dir, meta, m, opt, known, p);
  if (p.model.moe.given()) moe_saturation(p, dense_file);
  if (empty > 0) pv.emplace_back("note_empty_rows", fmt::format("{} rows with no work", empty));
  // Times past an hour (or extrapolated there), a KV block past 2 GiB: refused here, naming the
  // folder, instead of written into a profile that does not load.
  sim::check_profile_loads(p, "the profile imported from " + dir);
  // After the limits above (a time past an hour is named as that, not as a wrong tp).
  std::string gpu_from;
  const GpuSpec gpu = lss::gpu_figures(opt, known, &gpu_from);
  pv.emplace_back("tp_check", gpu.hbm_gbps > 0
                                  ? lss::check_tp_by_lm_head(seq_file, lm_head_only, m, tp, gpu)
                                  : "not checked: no GPU figures for hardware " + meta.hardware +
                                        " (--gpu-spec)");
  return p;
}

}  // namespace isim::calib
