// Shared pieces of the fuzz harnesses (tests/fuzz/fuzz_*.cpp; tests/fuzz/README.md).
//
// Contract of every harness: LLVMFuzzerTestOneInput hands the bytes to one parser. An
// isim::InputError (core/input_error.h: the one exception for bad user input) is the parser
// doing its job and ends the input; any other exception escapes, so libFuzzer (or replay_main)
// reports it, as it does crashes, hangs and sanitizer reports. Where a reader promises more
// (a trace written back reads back equal, a profile written back loads equal), the harness
// checks it and a broken promise escapes as std::logic_error. Nothing depends on earlier
// inputs: each input writes its own files and parses them from scratch.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/input_error.h"

namespace isim::fuzz {

namespace fs = std::filesystem;

inline std::string bytes(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The checkout the harness was built from (fixtures under tests/data, calibrate/models, ...).
inline std::string source_dir() {
  return ISIM_SOURCE_DIR;
}

// A folder of this process's own under TMPDIR, made on first use and removed at exit.
class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / ("isim-fuzz-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

inline const fs::path& scratch() {
  static const Scratch s;
  return s.dir();
}

// Writes `text` to `path` (replacing it); the path as a string.
inline std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw std::runtime_error("fuzz: cannot write " + path.string());
  return path.string();
}

// The input written to scratch()/name, for parsers that read a path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  return write_file(scratch() / name, bytes(data, size));
}

// A folder scratch()/name holding a copy of every file of `fixture` (read-only fixtures are
// made writable), made once; each input then overwrites one file of it.
inline fs::path fixture_copy(const std::string& name, const fs::path& fixture) {
  const fs::path d = scratch() / name;
  if (!fs::exists(d)) {
    fs::create_directories(d);
    for (const auto& e : fs::directory_iterator(fixture)) {
      if (!e.is_regular_file()) continue;
      const fs::path to = d / e.path().filename();
      fs::copy_file(e.path(), to);
      fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
    }
  }
  return d;
}

// Runs `parse`: true when it returned, false when it refused the input with an InputError.
// With ISIM_FUZZ_SHOW set in the environment the refusal is printed (to see why a seed fails).
template <class F>
bool accepted(F&& parse) {
  try {
    std::forward<F>(parse)();
    return true;
  } catch (const InputError& e) {
    static const bool show = std::getenv("ISIM_FUZZ_SHOW") != nullptr;
    if (show) std::fprintf(stderr, "InputError: %s\n", e.what());
    return false;
  }
}

// A promise of the parser broken: escapes the harness like any other finding.
[[noreturn]] inline void broken(const std::string& what) {
  throw std::logic_error("fuzz: " + what);
}

// Runs `f`, which must not refuse: an InputError here is a finding (a reader refusing what the
// parser itself returned).
template <class F>
void must_accept(const std::string& what, F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const InputError& e) {
    broken(what + ": " + e.what());
  }
}

}  // namespace isim::fuzz
