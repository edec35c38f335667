#include "experiments/yaml_util.h"

#include <cstdint>

#include "traces/input_error.h"
#include "traces/yaml_where.h"

namespace isim::exp {

std::string where(const std::string& file, const YAML::Node& n, const std::string& key) {
  return yaml_where(file, n, key);
}

void check_keys(const YAML::Node& n, const std::string& file, const std::string& path,
                std::initializer_list<const char*> valid) {
  if (!n.IsMap()) throw InputError(where(file, n, path) + ": expected a map");
  for (const auto& kv : n) {
    auto k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* v : valid) ok = ok || k == v;
    if (ok) continue;
    std::string list;
    for (const char* v : valid) list += (list.empty() ? "" : ", ") + std::string(v);
    throw InputError(where(file, kv.first, path.empty() ? k : path + "." + k) +
                     ": unknown key; valid keys: " + list);
  }
}

template <class T>
T read_as(const YAML::Node& n, const std::string& file, const std::string& key,
          const char* expected) {
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "not a scalar");
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(where(file, n, key) + ": expected " + expected);
  }
}

template std::string read_as<std::string>(const YAML::Node&, const std::string&, const std::string&,
                                          const char*);
template double read_as<double>(const YAML::Node&, const std::string&, const std::string&,
                                const char*);
template int64_t read_as<int64_t>(const YAML::Node&, const std::string&, const std::string&,
                                  const char*);
template uint64_t read_as<uint64_t>(const YAML::Node&, const std::string&, const std::string&,
                                    const char*);
template int32_t read_as<int32_t>(const YAML::Node&, const std::string&, const std::string&,
                                  const char*);
template bool read_as<bool>(const YAML::Node&, const std::string&, const std::string&, const char*);

}  // namespace isim::exp
