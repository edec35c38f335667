// Shell words and Kubernetes names for the scripts `isim sweep|plan submit` writes
// (experiments/cli/cli_submit.h).
#include <string>

#include "experiments/cli/cli_submit.h"

namespace isim::exp {

std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+@%-") ==
          std::string::npos)
    return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string dns_label(const std::string& name) {
  std::string s;
  for (char c : name) {
    const char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok)
      s += l;
    else if (!s.empty() && s.back() != '-')
      s += '-';
  }
  if (s.size() > 40) s.resize(40);  // room for the "isim-sweep-" prefix and "-merge"
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "isim" : s;
}

}  // namespace isim::exp
