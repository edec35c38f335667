// import_llmservingsim with the input as per_sequence.csv (tests/fuzz/fuzz_import_lss.h).
#define ISIM_FUZZ_FILE "per_sequence.csv"
#include "tests/fuzz/fuzz_import_lss.h"
