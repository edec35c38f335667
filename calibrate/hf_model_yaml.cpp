// An imported Hugging Face config written as a model YAML (calibrate/model.h's format), each
// value commented with where it came from (see hf_config.h).
#include <cctype>

#include <fmt/format.h>

#include "calibrate/hf_config.h"

namespace isim::calib {

namespace {

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') q += '\\';
    q += ch;
  }
  return q + '"';
}

// A name made only of letters, digits, '.', '-' and '_' (starting with a letter or digit) is
// written bare, as the committed models are; any other is quoted.
std::string yaml_name(const std::string& s) {
  bool bare = !s.empty() && std::isalnum(static_cast<unsigned char>(s[0])) != 0;
  for (char ch : s)
    bare = bare && (std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '-' ||
                    ch == '_');
  return bare ? s : quoted(s);
}

std::string origin_of(const HfImport& imp, const std::string& key) {
  for (const auto& [k, from] : imp.origin)
    if (k == key) return from;
  return "";
}

}  // namespace

std::string hf_model_yaml(const HfImport& imp) {
  const auto& s = imp.model.shape;
  std::string y = fmt::format(
      "# Imported by `isim model import` from the Hugging Face config {} ({}).\n"
      "# Each value's comment names the config.json key (or flag) it came from.\n",
      imp.path, imp.architecture);
  for (const auto& note : imp.notes) y += "# Not modelled: " + note + "\n";
  auto line = [&](const std::string& key, const std::string& value) {
    y += fmt::format("{}: {}  # {}\n", key, value, origin_of(imp, key));
  };
  line("name", yaml_name(s.name));
  y += "source: " + quoted(imp.model.source) + "\n";
  line("layers", std::to_string(s.layers));
  line("hidden", std::to_string(s.hidden));
  line("heads", std::to_string(s.heads));
  line("kv_heads", std::to_string(s.kv_heads));
  line("head_dim", std::to_string(s.head_dim));
  line("ffn", std::to_string(s.ffn));
  line("vocab", std::to_string(s.vocab));
  line("dtype", s.dtype);
  y += "# params: computed from the shapes above (no config.json key holds it):\n";
  for (const auto& l : imp.params_sum) y += "# " + l + "\n";
  y += fmt::format("params: {:.0f}\n", s.params);
  if (s.active_params > 0)
    y += fmt::format("active_params: {:.0f}  # computed above: the active sum\n", s.active_params);
  if (!s.weight_dtype.empty()) line("weight_dtype", s.weight_dtype);
  if (imp.model.max_position > 0) line("max_position", std::to_string(imp.model.max_position));
  auto nested = [&](const std::string& key, const std::string& value) {
    y += fmt::format("  {}: {}  # {}\n", key.substr(key.find('.') + 1), value, origin_of(imp, key));
  };
  if (s.moe.given()) {
    y += "moe:\n";
    nested("moe.experts", std::to_string(s.moe.experts));
    nested("moe.experts_per_token", std::to_string(s.moe.experts_per_token));
    nested("moe.expert_ffn", std::to_string(s.moe.expert_ffn));
    nested("moe.shared_ffn", std::to_string(s.moe.shared_ffn));
    nested("moe.dense_layers", std::to_string(s.moe.dense_layers));
  }
  if (s.mla.given()) {
    y += "mla:\n";
    nested("mla.kv_lora_rank", std::to_string(s.mla.kv_lora_rank));
    nested("mla.qk_rope_head_dim", std::to_string(s.mla.qk_rope_head_dim));
    if (s.mla.v_head_dim > 0) nested("mla.v_head_dim", std::to_string(s.mla.v_head_dim));
  }
  return y;
}

}  // namespace isim::calib
