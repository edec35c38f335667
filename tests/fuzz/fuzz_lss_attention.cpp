// import_llmservingsim with the input as attention.csv (tests/fuzz/fuzz_import_lss.h).
#define ISIM_FUZZ_FILE "attention.csv"
#include "tests/fuzz/fuzz_import_lss.h"
