// yaml_where: the "FILE:LINE: key" prefix that every YAML input error in intercept-sim starts
// with (experiment specs, model and GPU specs, profile importers).
//
// Contract: LINE is the node's 1-based line when yaml-cpp marked one; without a mark (a node
// built in memory, a missing key) the prefix is "FILE: key".
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace isim {

inline std::string yaml_where(const std::string& file, const YAML::Node& n,
                              const std::string& key) {
  std::string s = file;
  if (n && n.Mark().line >= 0) {
    s += ':';
    s += std::to_string(n.Mark().line + 1);
  }
  s += ": ";
  s += key;
  return s;
}

}  // namespace isim
