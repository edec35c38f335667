#include "core/yaml_depth.h"

#include <cctype>
#include <vector>

namespace isim {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// A line whose content ends in a block scalar header (| or > with optional indicators).
bool opens_block_scalar(std::string_view content) {
  size_t end = content.size();
  while (end > 0 && is_blank(content[end - 1])) --end;
  size_t i = end;
  while (i > 0 && (content[i - 1] == '+' || content[i - 1] == '-' ||
                   (content[i - 1] >= '0' && content[i - 1] <= '9')))
    --i;
  if (i == 0 || (content[i - 1] != '|' && content[i - 1] != '>')) return false;
  return i == 1 || is_blank(content[i - 2]);
}

}  // namespace

size_t yaml_too_deep_line(std::string_view text, int limit) {
  std::vector<size_t> block;  // the columns of the open block nodes
  int flow = 0;               // open [ and {
  char quote = 0;             // the quote a string that spans lines opened
  long scalar_indent = -1;    // inside a block scalar: its parent's indentation
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    size_t col = 0;
    while (col < line.size() && line[col] == ' ') ++col;
    const bool blank = col == line.size() || line[col] == '#' || line[col] == '\r';
    if (scalar_indent >= 0) {
      if (blank || static_cast<long>(col) > scalar_indent) continue;
      scalar_indent = -1;
    }
    if (blank && quote == 0) continue;
    size_t i = col;
    if (quote == 0 && flow == 0) {
      // Block structure: each "- " opens a level at its column, then the content one more.
      auto open_at = [&](size_t c) {
        while (!block.empty() && block.back() >= c) block.pop_back();
        block.push_back(c);
      };
      while (i < line.size() && line[i] == '-' &&
             (i + 1 == line.size() || is_blank(line[i + 1]) || line[i + 1] == '\r')) {
        open_at(i);
        ++i;
        while (i < line.size() && is_blank(line[i])) ++i;
      }
      if (i < line.size() && line[i] != '#' && line[i] != '\r') open_at(i);
      if (static_cast<long>(block.size()) > limit) return line_no;
      if (opens_block_scalar(line.substr(i))) scalar_indent = static_cast<long>(col);
    }
    for (; i < line.size(); ++i) {
      const char c = line[i];
      if (quote != 0) {
        if (c == '\\' && quote == '"') {
          ++i;
        } else if (c == quote) {
          quote = 0;
        }
        continue;
      }
      if (c == '#' && (i == 0 || is_blank(line[i - 1]))) break;
      if (c == '"' ||
          (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(line[i - 1]))))) {
        quote = c;
      } else if (c == '[' || c == '{') {
        if (static_cast<long>(block.size()) + ++flow > limit) return line_no;
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      }
    }
  }
  return 0;
}

}  // namespace isim
