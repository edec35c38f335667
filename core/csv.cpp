// CSV text (csv.h): RFC 4180 quoting and reading.
#include "core/csv.h"

#include <string>
#include <vector>

#include "core/input_error.h"

namespace isim {

namespace {

// "FILE:LINE: ", the prefix of every error (lines count from 1).
std::string at(const std::string& file, size_t line) {
  return file + ':' + std::to_string(line) + ": ";
}

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}

std::string join_csv(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    line += csv_field(fields[i]);
  }
  line += '\n';
  return line;
}

std::vector<CsvRecord> read_csv(const std::string& text, const std::string& file) {
  std::vector<CsvRecord> out;
  CsvRecord rec;
  std::string field;
  size_t line = 1;
  size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;  // a UTF-8 byte-order mark
  bool in_record = false;
  rec.line = 1;
  while (i < text.size()) {
    char c = text[i];
    if (!in_record) {
      rec.line = line;
      in_record = true;
    }
    if (c == '"' && field.empty()) {
      // A quoted field: up to the closing quote, "" is a quote.
      size_t start_line = line;
      ++i;
      while (true) {
        if (i >= text.size()) throw InputError(at(file, start_line) + "unterminated quoted field");
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (text[i] == '\n') ++line;
        field += text[i++];
      }
      if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
        throw InputError(at(file, line) + "unexpected text after a quoted field");
      continue;
    }
    if (c == ',') {
      rec.fields.push_back(std::move(field));
      field.clear();
      ++i;
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      rec.fields.push_back(std::move(field));
      field.clear();
      out.push_back(std::move(rec));
      rec = CsvRecord{};
      in_record = false;
      i += c == '\r' ? 2 : 1;
      ++line;
    } else {
      field += c;
      ++i;
    }
  }
  if (in_record) {
    rec.fields.push_back(std::move(field));
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace isim
