// Internal to traces/: the agent context signals of the native JSONL format (Segment::event as
// "context_event", Segment::retention as "retention"; traces/session.h has their semantics and
// traces/jsonl.h the format).
//
// Contract:
// - context_event_from_json / retention_from_json read the value of segments[k]'s key, with
//   `prefix` = "segments[k]."; type errors throw InputError `WHERE: FIELD: reason`.
// - validate_signals holds the semantic checks that do not depend on JSON types (validate_session
//   calls it), so importers and generators get them too.
// - signals_json gives `,"context_event":{...}` then `,"retention":[...]`, each only when
//   present, in the key order the reader documents; "" for a segment without signals.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/session.h"

namespace isim::trace::jsonl_signals {

ContextEvent context_event_from_json(const nlohmann::json& j, const std::string& where,
                                     const std::string& prefix);
std::vector<Retention> retention_from_json(const nlohmann::json& j, const std::string& where,
                                           const std::string& prefix);
void validate_signals(const Session& s, const std::string& where);
std::string signals_json(const Segment& seg);

// "none", "reset", "fork" or "end".
const char* kind_name(ContextEventKind k);

}  // namespace isim::trace::jsonl_signals
