// Conversations rebuilt from prefix hashes (traces/conversations.h).
#include "traces/conversations.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/hash.h"

namespace isim::trace {
namespace {

// A prompt's full blocks, as a list and as the rolling key of that list.
struct Prompt {
  std::vector<uint64_t> blocks;
  uint64_t key = 0;
  double arrival = 0;
};

// The key of a list of hashes extended by one more.
uint64_t extend(uint64_t key, uint64_t id) {
  return splitmix64(key ^ splitmix64(id + 0x9e3779b97f4a7c15ULL));
}

// Prompts by the key of their full blocks: each key's prompts in the order they were added.
class PromptIndex {
 public:
  void add(int32_t owner, const Prompt& p) { by_key_[p.key].push_back({owner, p}); }
  void remove(int32_t owner, uint64_t key) {
    auto& v = by_key_[key];
    const auto it =
        std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == owner; });
    if (it != v.end()) v.erase(it);
  }
  // The owner and length of the first prompt whose blocks are hashes[0, k), that arrived before
  // t and that `may(owner, k)` accepts, for the largest such k; {-1, 0} when none.
  template <class May>
  std::pair<int32_t, size_t> longest(const std::vector<uint64_t>& hashes,
                                     const std::vector<uint64_t>& keys, double t, May may) const {
    for (size_t k = hashes.size(); k >= 1; --k) {
      const auto it = by_key_.find(keys[k - 1]);
      if (it == by_key_.end()) continue;
      for (const auto& [owner, p] : it->second)
        if (p.arrival < t && p.blocks.size() == k && may(owner, k) &&
            std::equal(p.blocks.begin(), p.blocks.end(), hashes.begin()))
          return {owner, k};
    }
    return {-1, 0};
  }

 private:
  std::unordered_map<uint64_t, std::vector<std::pair<int32_t, Prompt>>> by_key_;
};

struct Conversation {
  Session s;
  int64_t context = 0;  // every input and output so far (resets applied)
  Prompt latest;
  // Its first full block no earlier prompt had in full (none: SIZE_MAX): a
  // prompt continues it only through that block, not through a system prompt all share.
  size_t own_from = SIZE_MAX;
};

Prompt prompt_of(const Session& r, const std::vector<uint64_t>& keys) {
  Prompt p;
  p.arrival = r.arrival_s;
  if (r.prefix.empty() || r.prefix.block_tokens <= 0) return p;  // no full block
  const auto full = static_cast<size_t>(r.segments.front().input / r.prefix.block_tokens);
  const size_t n = std::min(full, r.prefix.hashes.size());
  p.blocks.assign(r.prefix.hashes.begin(), r.prefix.hashes.begin() + static_cast<ptrdiff_t>(n));
  p.key = n > 0 ? keys[n - 1] : 0;
  return p;
}

// Appends request r (its prompt `p`) to conversation c as its next turn.
void continue_with(Conversation& c, const Session& r, const Prompt& p, ConversationReport& rep) {
  const Segment& req = r.segments.front();
  const int64_t bt = r.prefix.block_tokens;
  Segment& last = c.s.segments.back();
  last.intercept = Intercept{"user", r.arrival_s - c.latest.arrival};
  Segment next;
  next.output = req.output;
  if (req.input > c.context) {
    next.input = req.input - c.context;
  } else {
    const int64_t shared =
        std::min(static_cast<int64_t>(c.latest.blocks.size()) * bt, req.input - 1);
    next.event = ContextEvent{ContextEventKind::kReset, shared, shared, ""};
    next.input = req.input - shared;
    c.context = shared;
    ++rep.resets;
  }
  c.context += next.input + next.output;
  c.s.segments.push_back(std::move(next));
  c.latest = p;
  ++rep.continued;
}

}  // namespace

Trace chain_conversations(const Trace& requests, ConversationReport* report) {
  ConversationReport rep;
  std::vector<Conversation> convs;
  PromptIndex latest, retired;
  std::unordered_set<uint64_t> seen;  // every full block of the prompts so far
  std::vector<uint64_t> keys;
  const auto may = [&convs](int32_t owner, size_t k) {
    return k > convs[static_cast<size_t>(owner)].own_from;
  };
  for (const Session& r : requests) {
    if (r.segments.size() != 1)
      throw std::invalid_argument(fmt::format(
          "conversations: request {} is not one call ({} segments)", r.id, r.segments.size()));
    ++rep.requests;
    keys.clear();
    uint64_t key = 0;
    for (uint64_t id : r.prefix.hashes) keys.push_back(key = extend(key, id));
    const Prompt p = prompt_of(r, keys);
    const auto [c, k] = latest.longest(r.prefix.hashes, keys, r.arrival_s, may);
    // A prompt that extends an earlier turn of a conversation further than any latest one is a
    // branch (a retry, an edited turn): a conversation of its own.
    const bool branch = retired.longest(r.prefix.hashes, keys, r.arrival_s, may).second > k;
    if (c >= 0 && !branch) {
      Conversation& conv = convs[static_cast<size_t>(c)];
      latest.remove(c, conv.latest.key);
      retired.add(c, conv.latest);
      continue_with(conv, r, p, rep);
      if (!p.blocks.empty()) latest.add(c, p);
    } else {
      rep.branches += branch;
      Conversation conv;
      conv.s.id = "c" + r.id;
      conv.s.arrival_s = r.arrival_s;
      conv.s.prefix = r.prefix;
      conv.s.segments.push_back(r.segments.front());
      conv.context = r.segments.front().input + r.segments.front().output;
      conv.latest = p;
      for (size_t j = 0; j < p.blocks.size() && conv.own_from == SIZE_MAX; ++j)
        if (!seen.contains(p.blocks[j])) conv.own_from = j;
      const auto idx = static_cast<int32_t>(convs.size());
      if (!p.blocks.empty()) latest.add(idx, p);
      convs.push_back(std::move(conv));
    }
    seen.insert(p.blocks.begin(), p.blocks.end());
  }
  Trace out;
  out.reserve(convs.size());
  for (Conversation& c : convs) {
    rep.most_turns = std::max(rep.most_turns, static_cast<int64_t>(c.s.segments.size()));
    out.push_back(std::move(c.s));
  }
  rep.conversations = static_cast<int64_t>(out.size());
  if (report) *report = rep;
  return out;
}

}  // namespace isim::trace
