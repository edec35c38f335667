// Engine::lookahead (sim/engine.h): what the iteration in flight could hand its owner when it
// ends. A session finishes its segment at an iteration's end only through emit_token, which a
// batch entry reaches at most once per iteration, so a session with more than one token left
// in its segment cannot; a prefill chunk that does not complete the prompt emits nothing, and
// counting it anyway only makes the bound earlier (safe).
#include <algorithm>

#include "sim/engine.h"

namespace isim::sim {

Engine::Lookahead Engine::lookahead(Nanos end) const {
  Lookahead out;
  // A coalesced run (sim/decode_run.h) adds k tokens to each of its sessions by its end.
  const int64_t k = run_.steps_pending();
  for (const BatchEntry& e : batch_.entries()) {
    const SessionState& s = table_[e.h];
    if (s.decoded_in_seg + k < s.seg_output) continue;
    if (s.last_segment()) {
      out.finish = end;
      continue;
    }
    out.pause = std::min(out.pause, end + from_seconds(s.segment().intercept->duration_s));
  }
  return out;
}

}  // namespace isim::sim
