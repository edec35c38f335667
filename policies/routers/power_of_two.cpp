// power-of-two: draw two distinct eligible replicas at random (seeded) and take the one with
// fewer outstanding tokens (Mitzenmacher, "The Power of Two Choices in Randomized Load
// Balancing", IEEE TPDS 2001). Parameter: seed (default 1).
#include <vector>

#include "core/rng.h"
#include "policies/routers.h"

namespace isim::policy {

namespace {

class PowerOfTwo final : public cluster::Router {
 public:
  explicit PowerOfTwo(uint64_t seed) : seed_(seed), rng_(seed) {}
  std::string name() const override { return "power-of-two"; }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"seed", std::to_string(seed_)}};
  }
  int32_t route(const cluster::RouteRequest&, const cluster::ClusterView& v) override {
    ok_.clear();
    for (int32_t r = 0; r < v.replicas(); ++r)
      if (v.eligible(r)) ok_.push_back(r);
    if (ok_.empty()) return -1;
    if (ok_.size() == 1) return ok_.front();
    const auto n = static_cast<uint64_t>(ok_.size());
    const uint64_t i = rng_.next() % n;
    const uint64_t j = (i + 1 + rng_.next() % (n - 1)) % n;  // distinct from i
    const int32_t a = ok_[i], b = ok_[j];
    const int64_t la = v.replica(a).load().outstanding_tokens();
    const int64_t lb = v.replica(b).load().outstanding_tokens();
    return la != lb ? (la < lb ? a : b) : std::min(a, b);
  }

 private:
  uint64_t seed_;
  Rng rng_;
  std::vector<int32_t> ok_;
};

}  // namespace

void add_router_power_of_two(cluster::RouterRegistry& reg) {
  reg.add("power-of-two", "two random replicas (seeded), the less loaded wins (Mitzenmacher 2001)",
          [](const Params& p) {
            const auto seed =
                p.get<uint64_t>("seed", 1, in(0, 18446744073709551615.0).because("64 bits"),
                                "seed of the random pair");
            p.done("router 'power-of-two'");
            return std::make_unique<PowerOfTwo>(seed);
          });
}

}  // namespace isim::policy
