// import_llmservingsim with the input as dense.csv (tests/fuzz/fuzz_import_lss.h).
#define ISIM_FUZZ_FILE "dense.csv"
#include "tests/fuzz/fuzz_import_lss.h"
