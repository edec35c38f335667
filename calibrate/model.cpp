#include "calibrate/model.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "traces/input_error.h"
#include "traces/yaml_where.h"

namespace isim::calib {

namespace {

template <class T>
T get(const YAML::Node& root, const std::string& file, const char* key, const char* expected) {
  YAML::Node n = root[key];
  if (!n) throw InputError(file + ": " + key + ": missing (expected " + expected + ")");
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "not a scalar");
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(yaml_where(file, n, key) + ": expected " + expected);
  }
}

}  // namespace

ModelSpec load_model(const std::string& path) {
  YAML::Node root = load_yaml_file(path, "model file");
  if (!root.IsMap()) throw InputError(path + ": expected a map of model keys");
  static const char* kKeys[] = {"name",     "source", "layers", "hidden", "heads", "kv_heads",
                                "head_dim", "ffn",    "vocab",  "dtype",  "params"};
  for (const auto& kv : root) {
    auto k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* v : kKeys) ok = ok || k == v;
    if (!ok) {
      std::string list;
      for (const char* v : kKeys) list += (list.empty() ? "" : ", ") + std::string(v);
      throw InputError(yaml_where(path, kv.first, k) + ": unknown key; valid keys: " + list);
    }
  }
  ModelSpec m;
  auto& s = m.shape;
  s.name = get<std::string>(root, path, "name", "a string");
  m.source = get<std::string>(root, path, "source", "where the numbers come from");
  auto positive = [&](const char* key, int& out) {
    out = get<int>(root, path, key, "a positive integer");
    if (out <= 0) throw InputError(yaml_where(path, root[key], key) + ": must be > 0");
  };
  positive("layers", s.layers);
  positive("hidden", s.hidden);
  positive("heads", s.heads);
  positive("kv_heads", s.kv_heads);
  positive("head_dim", s.head_dim);
  positive("ffn", s.ffn);
  positive("vocab", s.vocab);
  if (s.heads % s.kv_heads != 0)
    throw InputError(yaml_where(path, root["kv_heads"], "kv_heads") + ": heads (" +
                     std::to_string(s.heads) + ") must be a multiple of kv_heads");
  s.dtype = get<std::string>(root, path, "dtype", "fp16, bf16, fp32 or fp8");
  if (s.dtype != "fp16" && s.dtype != "bf16" && s.dtype != "fp32" && s.dtype != "fp8")
    throw InputError(yaml_where(path, root["dtype"], "dtype") + ": unknown dtype '" + s.dtype +
                     "'; valid: bf16, fp16, fp32, fp8");
  s.params = get<double>(root, path, "params", "the parameter count");
  if (!(s.params > 0))
    throw InputError(yaml_where(path, root["params"], "params") + ": must be > 0");
  s.tp = 1;
  return m;
}

}  // namespace isim::calib
