// Sweep results.csv shards (experiments/sweep/sweep.h): merge_results on the input as one shard,
// which reads it with read_csv (RFC 4180 quoting) and checks its header and run indices.
#include <vector>

#include "experiments/sweep/sweep.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("results.csv", data, size);
  fuzz::accepted([&] {
    std::vector<size_t> missing;
    exp::merge_results({path}, &missing);
  });
  return 0;
}
