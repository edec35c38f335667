// aiconfigurator kernel tables (calibrate/import_aiconfigurator.h: import_aiconfigurator for
// Llama-3.1-8B, tp 1, on tests/data/aiconfigurator-excerpt), the input replacing one file of it:
// define ISIM_FUZZ_FILE before including this.
#pragma once

#include "calibrate/import_aiconfigurator.h"
#include "tests/fuzz/fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string dir = fuzz::fixture_with("aiconfigurator-excerpt", ISIM_FUZZ_FILE, data, size);
  return fuzz::import_profile(
      dir, [](const std::string& d) { return calib::import_aiconfigurator(d, fuzz::llama_8b()); });
}
