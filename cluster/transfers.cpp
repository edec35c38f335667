// The fleet's KV copies over its links (cluster/transfers.h) and their global check.
#include "cluster/transfers.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace isim::cluster {

int32_t Transfers::add(const LinkSpec& spec) {
  links_.add(spec);
  return links_.size() - 1;
}

void Transfers::start(int32_t li, double bytes, const KvMove& m, TransferClient& to) {
  const int64_t id = links_[li].start(f_.now(), bytes);
  // A layer-wise prefill transfer sends here only what its last prefill iteration could not
  // stream: the link carried the whole KV.
  double carried = bytes;
  if (m.kind == KvMove::kPrefilled) {
    const sim::Engine& src = f_.engine(m.src);
    carried = std::max(bytes, kv_bytes(src, src.view().session(m.src_h).kv));
  }
  bytes_by_kind_[links_[li].spec().kind] += carried;
  moving_[{li, id}] = InFlight{m, &to};
  links_.schedule(f_.queue(), target_, kLink, li);
}

void Transfers::handle(const sim::Event& ev) {
  if (ev.type != kLink) unknown(ev);
  const auto li = static_cast<int32_t>(ev.arg);
  for (int64_t id : links_.fire(li, f_.now())) {
    auto node = moving_.extract({li, id});
    node.mapped().to->landed(node.mapped().move);
  }
  links_.schedule(f_.queue(), target_, kLink, li);
}

void Transfers::check(std::vector<int32_t>& seen, const std::vector<int32_t>& touched) const {
  auto fail = [](const std::string& m) { throw std::logic_error("global invariant: " + m); };
  size_t importing = 0, fetching = 0;
  for (int32_t r = 0; r < f_.size(); ++r)
    importing += f_.engine(r).view().queues().importing().size();
  for (const auto& [key, in] : moving_) {
    const KvMove& m = in.move;
    if (m.kind == KvMove::kDemote) continue;
    ++fetching;
    const sim::SessionState& b = f_.engine(m.dst).view().session(m.dst_h);
    const bool fetch =
        m.kind == KvMove::kFetchTier || m.kind == KvMove::kFetchPeer || m.kind == KvMove::kPrefetch;
    if (fetch) {
      if (b.idx != m.session || b.phase != sim::Phase::kImporting || b.kv != m.tokens)
        fail(fmt::format("session {}: its KV fetch to replica {} lost its end", m.session, m.dst));
      if (m.kind == KvMove::kFetchPeer) {
        const sim::SessionState& a = f_.engine(m.src).view().session(m.src_h);
        if (a.idx != m.session || a.phase != sim::Phase::kExporting || a.kv != m.tokens)
          fail(fmt::format("session {}: its KV fetch from replica {} lost its source", m.session,
                           m.src));
      } else if (f_.ledger().where(m.session).replica != m.dst) {
        fail(fmt::format("session {} fetches KV to replica {}, the ledger says {}", m.session,
                         m.dst, f_.ledger().where(m.session).replica));
      }
    } else {
      const sim::SessionState& a = f_.engine(m.src).view().session(m.src_h);
      if (a.idx != m.session || a.phase != sim::Phase::kExporting || b.idx != m.session ||
          b.phase != sim::Phase::kImporting || a.kv != b.kv)
        fail(fmt::format("session {}: its transfer from replica {} to {} lost an end", m.session,
                         m.src, m.dst));
    }
    const int32_t want = m.src >= 0 ? 2 : 1;
    if (seen[static_cast<size_t>(m.session)] != want)
      fail(fmt::format("session {} {} is on {} replicas", m.session,
                       fetch ? "fetching KV" : "in flight", seen[static_cast<size_t>(m.session)]));
    seen[static_cast<size_t>(m.session)] = 1;
  }
  if (importing != fetching)
    fail(fmt::format("{} sessions import KV but {} transfers are in flight", importing, fetching));
  for (int32_t i : touched)
    if (seen[static_cast<size_t>(i)] > 1) fail(fmt::format("session {} is on two replicas", i));
}

}  // namespace isim::cluster
