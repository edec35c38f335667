// Internal to calibrate/hf_config*.cpp: a Hugging Face config.json's keys read with checks, and
// the readers of each family's shapes. Not a public header.
//
// Contract: every error is InputError "PATH: KEY: reason; expected WHAT", KEY prefixed with
// `text_config.` when the keys are a multimodal wrapper's nested text model. Every key read is
// recorded with its value (`used`) for the model's `source`.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/hf_config.h"
#include "calibrate/hf_config_params.h"

namespace isim::calib {

class HfKeys {
 public:
  using json = nlohmann::json;
  static constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

  HfKeys(const json& j, std::string path, std::string prefix = "")
      : j_(j), path_(std::move(path)), prefix_(std::move(prefix)) {}

  const std::string& path() const { return path_; }
  const std::string& prefix() const { return prefix_; }
  // The key as messages and origins name it (with the text_config. prefix).
  std::string name(const std::string& key) const { return prefix_ + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  bool given(const std::string& key) const {
    const auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  const json& at(const std::string& key) const { return j_.at(key); }

  // A required positive integer no larger than `max`.
  int64_t count(const std::string& key, int64_t max = kIntMax);
  std::optional<int64_t> optional_count(const std::string& key, int64_t max = kIntMax);
  // A required integer >= 0 (e.g. first_k_dense_replace).
  int64_t non_negative(const std::string& key, int64_t max = kIntMax);
  bool flag(const std::string& key, bool def);
  std::optional<std::string> optional_string(const std::string& key);
  void record(const std::string& key, const std::string& value) {
    used_.push_back(name(key) + " " + value);
  }
  const std::vector<std::string>& used() const { return used_; }

 private:
  int64_t checked(const std::string& key, int64_t min, int64_t max, const char* what);

  const json& j_;
  std::string path_;
  std::string prefix_;
  std::vector<std::string> used_;
};

// Llama, Qwen2/3, Mistral and their MoE kin share their key names (hf_config_shapes.cpp).
Shapes read_gqa_shapes(HfKeys& c, Family f, HfImport& imp);
Shapes read_gptj_shapes(HfKeys& c, HfImport& imp);
// DeepSeek-V2/V3, Kimi K2, GLM-5: MLA attention (hf_config_moe.cpp).
Shapes read_mla_shapes(HfKeys& c, Family f, HfImport& imp);
// The experts of a MoE family into `s` (hf_config_moe.cpp).
void read_experts(HfKeys& c, Family f, Shapes& s, HfImport& imp);
// `quantization_config` -> the weights' dtype ("" when absent), its origin in *origin
// (hf_config_quant.cpp).
std::string read_weight_dtype(HfKeys& c, std::string* origin);

}  // namespace isim::calib
