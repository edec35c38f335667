// LLMServingSim perf folders (calibrate/import_llmservingsim.h: import_llmservingsim for
// Llama-3.1-8B on tests/data/llmservingsim-excerpt), the input replacing one file of it:
// define ISIM_FUZZ_FILE before including this.
#pragma once

#include "calibrate/import_llmservingsim.h"
#include "tests/fuzz/fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string dir = fuzz::fixture_with("llmservingsim-excerpt", ISIM_FUZZ_FILE, data, size);
  return fuzz::import_profile(
      dir, [](const std::string& d) { return calib::import_llmservingsim(d, fuzz::llama_8b()); });
}
