// Strict YAML reading for experiment specs: every key is known, every value has the expected
// type, and each error names the file, the line and the key path.
#pragma once

#include <initializer_list>
#include <string>

#include <yaml-cpp/yaml.h>

namespace isim::exp {

// "FILE:LINE: key: reason" (LINE from the node's mark when it has one).
std::string where(const std::string& file, const YAML::Node& n, const std::string& key);

// Throws InputError for any key of map `n` not in `valid`, listing the valid keys.
void check_keys(const YAML::Node& n, const std::string& file, const std::string& path,
                std::initializer_list<const char*> valid);

template <class T>
T read_as(const YAML::Node& n, const std::string& file, const std::string& key,
          const char* expected);

}  // namespace isim::exp
