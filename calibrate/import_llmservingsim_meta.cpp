// The LLMServingSim importer's meta.yaml reader.
#include <fmt/format.h>

#include "calibrate/import_llmservingsim_parts.h"
#include "core/input_error.h"
#include "core/strict_yaml.h"

namespace isim::calib::lss {

namespace {

YAML::Node need(const std::string& file, const YAML::Node& parent, const std::string& key,
                const std::string& path) {
  YAML::Node n = parent[key];
  if (!n) throw InputError(yaml_where(file, parent, path) + ": missing");
  return n;
}

// `n` (at `path`) when it is a map of string keys: operator[] on a scalar or a list throws
// YAML's own error, and a lookup among keys that are not all strings can match one.
const YAML::Node& map_at(const std::string& file, const YAML::Node& n, const std::string& path) {
  if (!n.IsMap())
    throw InputError(yaml_where(file, n, path) + ": expected a map, got " + yaml_describe(n));
  for (const auto& kv : n) yaml_key(kv.first, file, path == "(document)" ? "" : path);
  return n;
}

}  // namespace

Meta read_meta(const std::string& file, const sim::ModelShape& m) {
  YAML::Node root = load_yaml_file(file, "");
  map_at(file, root, "(document)");
  Meta meta;
  auto text = [&](const char* key) {
    return read_as<std::string>(need(file, root, key, key), file, key, "a string");
  };
  auto optional_text = [&](const char* key) {
    return root[key] ? read_as<std::string>(root[key], file, key, "a string") : std::string("?");
  };
  meta.gpu = text("gpu");
  meta.hardware = text("hardware");
  meta.hf_model = text("model");
  meta.vllm = optional_text("vllm_version");
  meta.cuda = optional_text("cuda_version");
  meta.profiled_at = optional_text("profiled_at");
  const YAML::Node tps = need(file, root, "tp_degrees", "tp_degrees");
  if (!tps.IsSequence())
    throw InputError(yaml_where(file, tps, "tp_degrees") + ": expected a list");
  for (const auto& t : tps)
    meta.tp_degrees.push_back(read_as<int32_t>(t, file, "tp_degrees", "an int"));
  const YAML::Node eng =
      map_at(file, need(file, root, "engine_effective", "engine_effective"), "engine_effective");
  if (eng["tensor_parallel_size"])
    meta.engine_tp = read_as<int32_t>(eng["tensor_parallel_size"], file,
                                      "engine_effective.tensor_parallel_size", "an int");
  const YAML::Node bs = need(file, eng, "block_size", "engine_effective.block_size");
  meta.block_tokens =
      read_as<int32_t>(bs, file, "engine_effective.block_size", "a positive integer");
  if (meta.block_tokens <= 0) {
    throw InputError(yaml_where(file, bs, "engine_effective.block_size") + ": must be > 0");
  }
  // hf_overrides: the shapes the profiler gave its one-layer model. They must be the model's own
  // shapes, or its per-rank shapes for one of the profiled TP degrees.
  const YAML::Node hf = eng["hf_overrides"];
  if (hf) {
    map_at(file, hf, "engine_effective.hf_overrides");
    const std::pair<const char*, int> keys[] = {{"num_attention_heads", m.heads},
                                                {"num_key_value_heads", m.kv_heads},
                                                {"intermediate_size", m.ffn},
                                                {"vocab_size", m.vocab}};
    int shown_tp = 0;
    for (const int tp : meta.tp_degrees) {
      bool all = true;
      for (const auto& [key, full] : keys) {
        if (!hf[key]) continue;
        const int v = read_as<int32_t>(hf[key], file, key, "an int");
        all = all && tp > 0 && full % tp == 0 && v == full / tp;
      }
      if (all) {
        shown_tp = tp;
        break;
      }
    }
    if (shown_tp == 0) {
      for (const auto& [key, full] : keys) {
        if (!hf[key]) continue;
        const int v = read_as<int32_t>(hf[key], file, key, "an int");
        if (v != full) {
          throw InputError(fmt::format(
              "{}: {} does not match model {} ({}) for any tp in tp_degrees",
              yaml_where(file, hf[key], std::string("engine_effective.hf_overrides.") + key), v,
              m.name, full));
        }
      }
    }
    if (shown_tp > 1) {
      meta.note = fmt::format(
          "meta.yaml engine_effective.hf_overrides shows the per-rank shapes of tp={} (the last "
          "profiled degree: meta.yaml is shared by the model's TP folders); which degree this "
          "folder's CSVs hold is checked by tp_check",
          shown_tp);
    }
  }
  return meta;
}

}  // namespace isim::calib::lss
