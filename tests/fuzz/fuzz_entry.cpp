// The libFuzzer entry point of fuzz_<name>: hands each input to the harness isim_fuzz_<name>
// (fuzz_<name>.cpp, compiled into isim_fuzz_harnesses with its entry point renamed), which
// ISIM_FUZZ_HARNESS names (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

extern "C" int ISIM_FUZZ_HARNESS(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ISIM_FUZZ_HARNESS(data, size);
}
