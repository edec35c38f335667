// Internal to traces/agents*.cpp: what agents.cpp (schedule, kinds, sessions) and
// agents_context.cpp (summarisation and subagents) share.
//
// Contract:
// - Located maps config keys to "FILE:LINE" for messages (the nearest enclosing key noted), or to
//   a fixed name for a config built in code; fail() throws `LOC: KEY: reason`.
// - agent_session draws one session of kind k arriving at start_s from rng as traces/agents.h
//   describes, truncated to k.max_context, its intercepts capped so that it ends within
//   kMaxSeconds (traces/dist.h: draw_seconds); with `forks` it also draws k.subagents' steps
//   and lists them there (those truncation cut off removed). `base` replaces segment 0's system
//   prompt (the tokens before the prompt draw) and its hashes, for a subagent that shares its
//   parent's context.
// - add_subagents appends the sessions the fork points of trace[parent] (of kind k) start.
// - check_context / read_context: the checks and YAML reading of summarise and subagents.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

#include "core/rng.h"
#include "traces/agents.h"

namespace isim {
class YamlMap;
}

namespace isim::trace {

class Located {
 public:
  explicit Located(std::string where);
  Located(std::string file, const YAML::Node& root);

  void note(const std::string& key, const YAML::Node& n);
  std::string loc(std::string key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& reason) const;
  void dist(const Dist& d, const std::string& key) const { check_dist(d, loc(key), key); }
  void time_dist(const Dist& d, const std::string& key) const {
    check_time_dist(d, loc(key), key);
  }
  Dist read(const YamlMap& m, const std::string& key);  // read_dist, noting where it was

 private:
  std::string where_;
  std::map<std::string, YAML::Node> nodes_;
};

// A tool step that starts subagents.
struct ForkPoint {
  size_t segment = 0;   // the parent's segment whose intercept waits for them
  int64_t context = 0;  // the parent's context after that segment
  int64_t intact = 0;   // its leading tokens that are still the parent's prompt
  double after_s = 0;   // the parent's intercepts before this one
  int64_t count = 0;    // subagents
  uint64_t seed = 0;    // their Rng
};

// The tokens before a session's prompt draw, with their hashes.
struct SessionBase {
  int64_t tokens = 0;
  std::vector<uint64_t> hashes;  // whole blocks of `tokens`
  int64_t keep = 0;              // its leading tokens a summary keeps (a system prompt)
};

Session agent_session(const AgentKind& k, int64_t block, double start_s, Rng& rng,
                      std::vector<ForkPoint>* forks, const SessionBase* base = nullptr);
void add_subagents(Trace& t, size_t parent, const AgentKind& k, const std::vector<ForkPoint>& forks,
                   const AgentsConfig& c, AgentsReport& rep);

void check_context(const AgentKind& k, const std::string& key, const AgentsConfig& c,
                   const Located& at);
void read_context(const YamlMap& m, AgentKind& k, Located& at);

}  // namespace isim::trace
