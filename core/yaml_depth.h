// How deeply a YAML text nests its lists and maps, measured on the text before any parser sees
// it: yaml-cpp recurses once per level and stops at its own guard with the bare message "bad
// file", naming neither the depth nor the reason.
//
// Contract: yaml_too_deep_line returns the 1-based line at which the nesting first exceeds
// `limit` levels, or 0 when it never does. A level is a flow bracket ([ or {) still open, or a
// block node (a "- " item, a key, a value) at a deeper indentation than the line's parents; the
// count may exceed the true depth by one per line (a scalar counts as a level), never fall
// below it. Text inside quotes, comments and block scalars (| and >) is skipped. It never throws.
#pragma once

#include <cstddef>
#include <string_view>

namespace isim {

// The most levels a YAML input may nest: the deepest spec we ship nests under 12.
inline constexpr int kMaxYamlNesting = 100;

size_t yaml_too_deep_line(std::string_view text, int limit = kMaxYamlNesting);

}  // namespace isim
