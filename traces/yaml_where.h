// YAML input helpers shared by experiment specs, model and GPU specs and profile importers.
//
// Contract:
// - yaml_where gives the "FILE:LINE: key" prefix every YAML input error starts with; LINE is
//   the node's 1-based line when yaml-cpp marked one, else the prefix is "FILE: key".
// - load_yaml_file reads and parses a file; it throws InputError "FILE: cannot open <what>"
//   (what: e.g. "model file"; empty for just "cannot open") or "FILE:LINE: YAML: message".
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <yaml-cpp/yaml.h>

#include "traces/input_error.h"

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

inline YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open" + (what.empty() ? "" : " " + what));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return YAML::Load(ss.str());
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ": YAML: " + e.msg);
  }
}

}  // namespace isim
