// Registry<T>: components registered by name with a one-line description.
//
// Contract: names are unique (adding one twice throws std::logic_error, a programming error);
// `create` on an unknown name throws InputError listing every valid name, so a typo in YAML or
// on the command line always tells the user what exists. Registration is explicit (a builtin
// list per folder), never by static initialisers that a linker may drop.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/input_error.h"

namespace isim {

template <class Product, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Product>(Args...)>;

  struct Entry {
    std::string name;
    std::string description;
    Factory factory;
  };

  explicit Registry(std::string what) : what_(std::move(what)) {}

  void add(std::string name, std::string description, Factory f) {
    if (entries_.count(name)) throw std::logic_error(what_ + " '" + name + "' registered twice");
    entries_.emplace(name, Entry{name, std::move(description), std::move(f)});
  }

  bool contains(const std::string& name) const { return entries_.count(name) != 0; }

  const Entry& get(const std::string& name, const std::string& where = "") const {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      std::string msg = where.empty() ? "" : where + ": ";
      msg += "unknown " + what_ + " '" + name + "'; valid: " + names_joined();
      throw InputError(msg);
    }
    return it->second;
  }

  // `where` prefixes the error (e.g. "exp.yaml: policy").
  std::unique_ptr<Product> create(const std::string& name, const std::string& where,
                                  Args... args) const {
    return get(name, where).factory(std::forward<Args>(args)...);
  }

  // Entries in name order.
  std::vector<const Entry*> entries() const {
    std::vector<const Entry*> v;
    for (const auto& [k, e] : entries_) v.push_back(&e);
    return v;
  }

  std::string names_joined() const {
    std::string s;
    for (const auto& [k, e] : entries_) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  const std::string& what() const { return what_; }

 private:
  std::string what_;
  std::map<std::string, Entry> entries_;
};

}  // namespace isim
