// fuzz_replay: runs a harness on files without libFuzzer, so that every build (any compiler, any
// build type) replays the committed corpus as a test (fuzz_replay_<name>).
//
// usage: fuzz_replay NAME PATH...
// NAME is a harness (tests/fuzz/CMakeLists.txt; `fuzz_replay --list` prints them); exit 2 for an
// unknown one.
// Each PATH is a file or a folder, walked recursively in sorted path order. Each input's name is
// printed before it runs (a crash then names it); at the end, how many inputs were replayed.
// Exit 1 when an exception escapes the harness (the file and its what() are printed), when a
// PATH does not exist, or when there was nothing to replay: the corpus folders are committed, so
// an empty one is a mistake, never a skip.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <cstring>

#define ISIM_FUZZ_TARGET(name) extern "C" int isim_fuzz_##name(const uint8_t* data, size_t size);
#include "fuzz_targets.inc"
#undef ISIM_FUZZ_TARGET

namespace {

using Harness = int (*)(const uint8_t*, size_t);
struct Entry {
  const char* name;
  Harness run;
};
#define ISIM_FUZZ_TARGET(name) {#name, isim_fuzz_##name},
constexpr Entry kHarnesses[] = {
#include "fuzz_targets.inc"
};
#undef ISIM_FUZZ_TARGET

Harness find_harness(const char* name) {
  for (const Entry& e : kHarnesses)
    if (std::strcmp(e.name, name) == 0) return e.run;
  return nullptr;
}

}  // namespace

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Entry& e : kHarnesses) std::printf("%s\n", e.name);
    return 0;
  }
  const Harness harness = argc >= 2 ? find_harness(argv[1]) : nullptr;
  if (!harness) {
    std::fprintf(stderr, "fuzz_replay: %s: expected a harness name (fuzz_replay --list), then "
                 "files or folders\n", argc >= 2 ? argv[1] : "no arguments");
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 2; i < argc; ++i) {
    const fs::path p = argv[i];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) found.push_back(e.path());
      std::sort(found.begin(), found.end());
      inputs.insert(inputs.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", p.c_str());
      return 1;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs to replay (usage: fuzz_replay %s FILE-OR-FOLDER...)\n",
                 argv[1]);
    return 1;
  }
  for (const auto& p : inputs) {
    std::ifstream f(p, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "replay: %s: cannot read\n", p.c_str());
      return 1;
    }
    const std::vector<char> text((std::istreambuf_iterator<char>(f)),
                                 std::istreambuf_iterator<char>());
    std::printf("%s\n", p.c_str());
    std::fflush(stdout);
    try {
      harness(reinterpret_cast<const uint8_t*>(text.data()), text.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "replay: %s: uncaught exception: %s\n", p.c_str(), e.what());
      return 1;
    } catch (...) {
      std::fprintf(stderr, "replay: %s: uncaught exception of a type not std::exception\n",
                   p.c_str());
      return 1;
    }
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
