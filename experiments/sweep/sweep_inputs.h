// The prepared inputs of a sweep's runs (trace, arrivals, profile), shared by the runs that
// need the same ones. Internal to experiments/sweep/sweep.cpp.
//
// Contract:
// - inputs_key(e) is the resolved spec of everything prepare() reads, so runs with equal keys
//   can share one Inputs, and a new trace option can never be missed.
// - InputsCache(todo) counts each key's users; get(key, e) prepares e's inputs (key =
//   inputs_key(e)) once (the first caller prepares, the others wait for it; an error reaches
//   every waiter); release(key) drops them after their last user. get and release may be called from several threads.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "experiments/run/run.h"
#include "experiments/sweep/sweep.h"

namespace isim::exp {

// Runs with equal keys share their prepared Inputs (trace, arrivals, profile). The key is the
// resolved spec of everything prepare() reads, so a new trace option can never be missed.
inline std::string inputs_key(const Experiment& e) {
  YAML::Node r = e.resolved();
  YAML::Node k;
  k["trace"] = r["trace"];
  k["arrival"] = r["arrival"];
  k["seed"] = r["seed"];
  k["profile"] = r["profile"];
  if (r["cluster"]) k["cluster"] = r["cluster"];  // groups may name their own profiles
  return YAML::Dump(k);
}

// Prepared inputs, shared by the runs that need the same ones and dropped after the last.
class InputsCache {
 public:
  explicit InputsCache(const std::vector<const SweepRun*>& todo) {
    for (const auto* r : todo) ++cache_[inputs_key(r->experiment)].users;
  }
  std::shared_ptr<const Inputs> get(const std::string& key, const Experiment& e) {
    std::shared_future<std::shared_ptr<const Inputs>> fut;
    std::promise<std::shared_ptr<const Inputs>> mine;
    bool preparer = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& c = cache_[key];
      if (!c.inputs.valid()) {
        c.inputs = mine.get_future().share();
        preparer = true;
      }
      fut = c.inputs;
    }
    if (preparer) {
      try {
        mine.set_value(std::make_shared<const Inputs>(prepare(e)));
      } catch (...) {
        mine.set_exception(std::current_exception());
      }
    }
    return fut.get();
  }
  // One user of e's inputs is done with them (call under the caller's lock or alone).
  void release(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--cache_[key].users == 0) cache_.erase(key);
  }

 private:
  struct Cached {
    std::shared_future<std::shared_ptr<const Inputs>> inputs;
    size_t users = 0;
  };
  std::mutex mu_;
  std::map<std::string, Cached> cache_;
};

}  // namespace isim::exp
