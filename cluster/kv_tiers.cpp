#include "cluster/kv_tiers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace isim::cluster {

const char* tier_name(TierKind k) { return k == TierKind::kNodeCpu ? "node_cpu" : "pool"; }

std::vector<TierEntry> TierStore::make_room(
    double bytes, bool& fits,
    const std::function<bool(const TierEntry&, const TierEntry&)>& first_to_go) {
  std::vector<TierEntry> gone;
  fits = bytes <= capacity_;
  if (!fits) return gone;
  while (used_ + bytes > capacity_) {
    auto victim = entries_.begin();
    for (auto it = std::next(entries_.begin()); it != entries_.end(); ++it)
      if (first_to_go(it->second, victim->second)) victim = it;
    gone.push_back(victim->second);
    used_ -= victim->second.bytes;
    entries_.erase(victim);
  }
  return gone;
}

void TierStore::put(const TierEntry& e) {
  if (used_ + e.bytes > capacity_ || entries_.count(e.session))
    throw std::logic_error(fmt::format("TierStore::put: session {} does not fit in {}",
                                       e.session, tier_name(kind_)));
  entries_.emplace(e.session, e);
  used_ += e.bytes;
  peak_ = std::max(peak_, used_);
}

const TierEntry* TierStore::find(int32_t session) const {
  auto it = entries_.find(session);
  return it == entries_.end() ? nullptr : &it->second;
}

TierEntry TierStore::take(int32_t session) {
  auto it = entries_.find(session);
  if (it == entries_.end())
    throw std::logic_error(fmt::format("TierStore::take: session {} is not in {}", session,
                                       tier_name(kind_)));
  TierEntry e = it->second;
  used_ -= e.bytes;
  entries_.erase(it);
  return e;
}

void TierStore::mark_ready(int32_t session, sim::Nanos written, sim::Nanos t) {
  auto it = entries_.find(session);
  if (it != entries_.end() && it->second.written == written && it->second.ready == sim::kForever)
    it->second.ready = t;
}

sim::Nanos prefill_estimate(const sim::CostModel& cm, int64_t kv_before, int64_t tokens,
                            int64_t chunk) {
  sim::Nanos t = 0;
  chunk = std::max<int64_t>(chunk, 1);
  for (int64_t done = 0; done < tokens; done += chunk) {
    sim::BatchShape b;
    const int64_t c = std::min(chunk, tokens - done);
    b.total_tokens = c;
    b.num_logits = 1;
    b.prefills.push_back({c, kv_before + done});
    t += cm.forward(b);
  }
  return t;
}

sim::Nanos transfer_estimate(const LinkSpec& l, double bytes) {
  return static_cast<sim::Nanos>(std::ceil(l.latency_s * 1e9 + bytes / l.gbps));
}

bool fetch_pays(const FetchCase& c, int64_t threshold_tokens) {
  if (c.remote - c.local < std::max<int64_t>(threshold_tokens, 1)) return false;
  return c.transfer + c.prefill_remote < c.prefill_local;
}

}  // namespace isim::cluster
