// import_aiconfigurator with the input as generation_attention_perf.csv (tests/fuzz/fuzz_import_aic.h).
#define ISIM_FUZZ_FILE "generation_attention_perf.csv"
#include "tests/fuzz/fuzz_import_aic.h"
