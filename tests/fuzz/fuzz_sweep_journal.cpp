// Sweep shard journals (experiments/sweep/sweep_shards.h): merge_shards on the input as the one
// shard of a sweep, which reads its header and records (experiments/sweep/journal_record.h) and
// checks that every run is there once.
#include "experiments/sweep/sweep_shards.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace isim;
  const std::string path = fuzz::write_input("shard-1-of-1.jsonl", data, size);
  fuzz::accepted([&] { exp::merge_shards({path}); });
  return 0;
}
