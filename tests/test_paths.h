// Paths tests read from, relative to the checkout (never absolute paths of one machine).
#pragma once
#include <string>

namespace isim::test {
inline std::string source_dir() { return ISIM_SOURCE_DIR; }
inline std::string data_dir() { return std::string(ISIM_SOURCE_DIR) + "/tests/data"; }
// ../shared/data beside the checkout, as in CI.
inline std::string shared_data() { return std::string(ISIM_SOURCE_DIR) + "/../shared/data"; }
inline std::string bin_dir() { return std::string(ISIM_BINARY_DIR) + "/bin"; }
}  // namespace isim::test
