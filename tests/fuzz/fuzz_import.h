// The importer harnesses: each fuzzes one file of an importer's folder. A copy of the fixture
// folder (tests/data/<fixture>, valid as committed) is made once per process; each input then
// replaces the one file and the importer reads the folder. A profile it returns must load back
// equal (tests/fuzz/fuzz_profile_check.h).
#pragma once

#include "calibrate/model.h"
#include "tests/fuzz/fuzz_profile_check.h"

namespace isim::fuzz {

inline const calib::ModelSpec& llama_8b() {
  static const calib::ModelSpec m =
      calib::load_model(source_dir() + "/calibrate/models/llama-3.1-8b.yaml");
  return m;
}

// The fixture copy with `file` replaced by the input; the folder's path.
inline std::string fixture_with(const std::string& fixture, const std::string& file,
                                const uint8_t* data, size_t size) {
  const fs::path dir = fixture_copy(fixture, fs::path(source_dir()) / "tests/data" / fixture);
  write_file(dir / file, bytes(data, size));
  return dir.string();
}

// `import(dir)` returns a profile; refused input ends the input, a profile is round-tripped.
template <class Import>
int import_profile(const std::string& dir, Import&& import) {
  sim::Profile p;
  if (!accepted([&] { p = import(dir); })) return 0;
  check_profile_round_trip(p);
  return 0;
}

}  // namespace isim::fuzz
