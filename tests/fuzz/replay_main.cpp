// The main of replay_<name>: runs LLVMFuzzerTestOneInput on files without libFuzzer, so that
// every build (any compiler, any build type) replays the committed corpus as a test.
//
// usage: replay_<name> PATH...
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
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
    std::fprintf(stderr, "replay: no inputs to replay (usage: %s FILE-OR-FOLDER...)\n",
                 argc > 0 ? argv[0] : "replay");
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
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(text.data()), text.size());
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
