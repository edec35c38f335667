// `isim validate --kv-logs DIR`: the KV capacity rule (sim/vllm_kv_rule.h with the terms of
// calibrate/vllm_memory.h) checked against real vLLM servers' startup logs.
//
// Contract:
// - Known models (load_model_catalog): every *.yaml (calibrate/model.h) and *.json (a Hugging
//   Face config through calibrate/hf_config.h) in the given folders, in order; the first of a
//   name wins. A file that does not load stays in the catalog with its error, so that a log of
//   that model is skipped as "model not loadable" with the reason (e.g. a MoE config before the
//   importer reads it). Name: the YAML's `name`; for a JSON, its file name lowercased without
//   an `org--` prefix and a `_config` suffix.
// - match_model_id(id, quantization): a log's model id to a catalog name, by this stated rule:
//   the part after the last '/', lowercased; a quantized checkpoint's suffix sets weight_dtype
//   and is removed (-fp8-dynamic, -fp8: fp8; -quantized.w8a8, -w8a8: int8; -quantized.w4a16,
//   -w4a16: int4); a `meta-` prefix and the suffixes -instruct, -hf, -chat, -it are removed;
//   then kAliases (same shapes under another name) apply. vLLM's `quantization fp8` (online)
//   sets fp8; another quantization without a known suffix leaves weight_dtype "?" (skipped).
// - unmodelled(id): why a model cannot be modelled honestly (vision towers not counted,
//   gpt-oss's MXFP4 experts), as {category, detail}; {"", ""} otherwise.
// - check_kv_logs(dir, model_dirs): every *.log in DIR (sorted by name) read with
//   calibrate/vllm_startup_log.h; a log is skipped, in this order, when the server did not start
//   (.FAILED.log), logged no KV size, is of an unmodelled or unknown model, its model did not
//   load, or its settings cannot be modelled (a kv_cache_dtype other than auto/fp8*, more
//   pipeline stages than layers); otherwise predicted per pipeline stage (the fewest
//   blocks of 16 tokens of any stage, as vLLM takes the minimum over workers), with usable
//   memory = `worker requested memory` / gpu_memory_utilization (the device's CUDA total).
//   InputError (exit 2) for a missing DIR, a folder without *.log, or a log that is not a vLLM
//   log (FILE:LINE).
// - summary_line: "N logs: within 2%: K, within 5%: M, skipped: S (why)": N every log, K and M
//   the predicted logs with |error| at most 2% and 5% (M includes K), why the skipped counts by
//   category, largest first ("reason C, ...").
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/model.h"

namespace isim::calib {

struct KnownModel {
  std::string name, path;
  bool ok = false;
  ModelSpec spec;
  std::string error;  // why it did not load
};
std::vector<KnownModel> load_model_catalog(const std::vector<std::string>& dirs);

struct ModelMatch {
  std::string name;          // normalised id, after aliases
  std::string weight_dtype;  // "", fp8, int8, int4; "?" when the scheme is unknown
};
ModelMatch match_model_id(const std::string& id, const std::string& quantization);
std::pair<std::string, std::string> unmodelled(const std::string& id);

struct KvLogRow {
  std::string file, model_id, known;
  std::string skip, detail;  // category and reason; "" when predicted
  int tp = 1, pp = 1, stage = 0;
  std::string dtype, kv_dtype, weight_dtype;
  double weights_pred = 0, weights_log = -1, peak_pred = 0, peak_log = -1;
  double non_torch_pred = 0, non_torch_log = -1, kv_gib_pred = 0, kv_gib_log = -1;
  double graph_log = -1;
  int64_t tokens_pred = 0, tokens_log = 0;
  double error = 0;  // (predicted - logged) / logged tokens
};

struct KvLogReport {
  std::vector<KvLogRow> rows;
  int within2 = 0, within5 = 0, skipped = 0;
  std::map<std::string, int> why;  // skip category -> count
};

KvLogReport check_kv_logs(const std::string& dir, const std::vector<std::string>& model_dirs);
std::string summary_line(const KvLogReport& r);
// The table (one line per log, predicted and logged terms side by side), the rule's
// provenance, and the summary line last.
void print_kv_report(std::ostream& os, const KvLogReport& r);

}  // namespace isim::calib
