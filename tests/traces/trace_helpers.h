// Helpers the trace tests share: parsing native JSONL text, the InputError a text gives, and the
// error of an agents generator config written to a scratch file (named `a.yaml` in messages).
#pragma once

#include <sstream>
#include <string>

#include "core/input_error.h"
#include "tests/cli_helpers.h"
#include "traces/agents.h"
#include "traces/jsonl.h"

namespace isim::test {

inline trace::Trace parse_jsonl_text(const std::string& text) {
  std::istringstream in(text);
  return trace::parse_jsonl(in, "t.jsonl");
}

// `t` as the native format keeps it: Session::shared_prompt is source knowledge the JSONL format
// does not carry (traces/session.h), so a round trip compares against this.
inline trace::Trace as_written(trace::Trace t) {
  for (auto& s : t) s.shared_prompt = 0;
  return t;
}

// The InputError message for `text` (origin t.jsonl), or "" when it parses.
inline std::string jsonl_error(const std::string& text) {
  try {
    parse_jsonl_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The InputError of load_agents_config on `yaml`, with the scratch path shown as `a.yaml`; ""
// when it loads. `folder` names the scratch folder (one per test file).
inline std::string agents_config_error(const std::string& yaml, const std::string& folder) {
  const auto d = scratch(folder);
  const std::string path = write_file(d / "a.yaml", yaml);
  try {
    trace::load_agents_config(path);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    return msg.rfind(path, 0) == 0 ? "a.yaml" + msg.substr(path.size()) : msg;
  }
  return "";
}

}  // namespace isim::test
