// The importers' strict CSV reader (calibrate/import_common.h: read_csv, which reads a path),
// every cell of an accepted table read as a number (CsvTable::number), as the importers do.
#include "calibrate/import_common.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("table.csv", data, size);
  calib::CsvTable t;
  if (!fuzz::accepted([&] { t = calib::read_csv(path); })) return 0;
  if (t.rows.size() != t.lines.size()) fuzz::broken("read_csv: a row without its line");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.rows[r].size() != t.header.size()) fuzz::broken("read_csv: a row of another width");
    for (std::size_t c = 0; c < t.header.size(); ++c) fuzz::accepted([&] { t.number(r, c); });
  }
  if (!t.header.empty()) fuzz::accepted([&] { t.column(t.header.back()); });
  return 0;
}
