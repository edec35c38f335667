// CSV as every output of isim writes it and as sweeps read their shards' results back.
//
// Contract: csv_field quotes a field only when it holds a comma, a quote or a line break (RFC
// 4180; a quote inside is doubled); join_csv makes one line of such fields ending in "\n".
// read_csv reads a whole file's text into records, quoted fields may span lines; a record's
// `line` is where it starts (1-based). An unterminated quoted field is an InputError
// "FILE:LINE: unterminated quoted field", FILE being `file`. A UTF-8 byte-order mark at the start
// of `text` (spreadsheets write one) is skipped, not read into the first field.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace isim {

// CSV field quoting (RFC 4180: quoted only when it holds a comma, a quote or a line break) and
// reading of one file's text into records; `file` names it in messages.
std::string csv_field(const std::string& s);
// One CSV line: the fields quoted as csv_field does, comma-separated, ending in a newline.
std::string join_csv(const std::vector<std::string>& fields);
struct CsvRecord {
  size_t line = 0;  // 1-based line where the record starts
  std::vector<std::string> fields;
};
std::vector<CsvRecord> read_csv(const std::string& text, const std::string& file);

}  // namespace isim
