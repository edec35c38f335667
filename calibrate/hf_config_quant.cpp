// `quantization_config` -> the dtype of the quantized linear weights (see hf_config_keys.h).
// fp8 (quant_method fp8, fbgemm_fp8; compressed-tensors 8-bit float), int8 (compressed-tensors
// 8-bit int; gptq/awq bits 8), int4 (compressed-tensors 4-bit int; gptq/awq bits 4). Anything
// else is refused naming the key.
#include <fmt/format.h>

#include "calibrate/hf_config_keys.h"
#include "core/json_shown.h"

namespace isim::calib {

namespace {

using json = nlohmann::json;

const char* kSupportedQuant =
    "fp8, fbgemm_fp8, compressed-tensors (8-bit float, 8-bit int or 4-bit int weights), gptq and "
    "awq (bits 4 or 8)";

// The bits and type of one compressed-tensors group's weights.
std::string group_dtype(const HfKeys& c, const std::string& key, const json& group) {
  const std::string at = key + ".weights";
  if (!group.is_object() || !group.contains("weights") || !group["weights"].is_object())
    c.fail(at, "missing; expected a map {num_bits, type, ...} (the weights' quantization)");
  const json& w = group["weights"];
  if (!w.contains("num_bits") || !w["num_bits"].is_number_integer())
    c.fail(at + ".num_bits", "expected 4 or 8, got " +
                                 (w.contains("num_bits") ? shown(w["num_bits"]) : "none"));
  if (!w.contains("type") || !w["type"].is_string())
    c.fail(at + ".type", "expected \"float\" or \"int\", got " +
                             (w.contains("type") ? shown(w["type"]) : "none"));
  const auto bits = w["num_bits"].get<int64_t>();
  const auto type = w["type"].get<std::string>();
  if (bits == 8 && type == "float") return "fp8";
  if (bits == 8 && type == "int") return "int8";
  if (bits == 4 && type == "int") return "int4";
  c.fail(at, fmt::format("num_bits {} type '{}' is not modelled; expected 8-bit float, 8-bit int "
                         "or 4-bit int weights",
                         bits, type));
}

std::string compressed_tensors(const HfKeys& c, const json& q, std::string* origin) {
  const std::string key = "quantization_config.config_groups";
  if (!q.contains("config_groups") || !q["config_groups"].is_object() || q["config_groups"].empty())
    c.fail(key, "missing; expected a map of groups, each with its weights' num_bits and type");
  std::string dtype;
  for (const auto& [name, group] : q["config_groups"].items()) {
    const std::string d = group_dtype(c, key + "." + name, group);
    if (!dtype.empty() && d != dtype)
      c.fail(key, fmt::format("groups quantize weights differently ({} and {}); expected one "
                              "weight dtype for the model",
                              dtype, d));
    dtype = d;
  }
  *origin = fmt::format("{}.{} (compressed-tensors)", c.name(key),
                        q["config_groups"].begin().key() + ".weights");
  return dtype;
}

std::string bits_method(const HfKeys& c, const json& q, const std::string& method,
                        std::string* origin) {
  const char* key = q.contains("bits") ? "bits" : "w_bit";
  const std::string at = std::string("quantization_config.") + key;
  if (!q.contains(key) || !q[key].is_number_integer())
    c.fail("quantization_config.bits", "expected 4 or 8 (" + method + " weights), got " +
                                           (q.contains(key) ? shown(q[key]) : "none"));
  const auto bits = q[key].get<int64_t>();
  if (bits != 4 && bits != 8)
    c.fail(at, fmt::format("{} bits is not modelled; expected 4 or 8", bits));
  *origin = fmt::format("{} {} ({})", c.name(at), bits, method);
  return bits == 4 ? "int4" : "int8";
}

}  // namespace

std::string read_weight_dtype(HfKeys& c, std::string* origin) {
  if (!c.given("quantization_config")) return "";
  const json& q = c.at("quantization_config");
  if (!q.is_object())
    c.fail("quantization_config", "expected a map with quant_method, got " + shown(q));
  if (!q.contains("quant_method") || !q["quant_method"].is_string())
    c.fail("quantization_config.quant_method",
           std::string("missing; expected one of ") + kSupportedQuant);
  const auto method = q["quant_method"].get<std::string>();
  std::string dtype;
  if (method == "fp8" || method == "fbgemm_fp8") {
    dtype = "fp8";
    *origin = c.name("quantization_config.quant_method") + " " + method;
  } else if (method == "compressed-tensors") {
    dtype = compressed_tensors(c, q, origin);
  } else if (method == "gptq" || method == "awq") {
    dtype = bits_method(c, q, method, origin);
  } else {
    c.fail("quantization_config.quant_method",
           "'" + method + "' is not modelled; supported: " + kSupportedQuant);
  }
  c.record("quantization_config", method + " -> " + dtype);
  return dtype;
}

}  // namespace isim::calib
