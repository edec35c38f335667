// import_llmservingsim with the input as meta.yaml (tests/fuzz/fuzz_import_lss.h).
#define ISIM_FUZZ_FILE "meta.yaml"
#include "tests/fuzz/fuzz_import_lss.h"
