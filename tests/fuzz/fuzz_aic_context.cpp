// import_aiconfigurator with the input as context_attention_perf.csv (tests/fuzz/fuzz_import_aic.h).
#define ISIM_FUZZ_FILE "context_attention_perf.csv"
#include "tests/fuzz/fuzz_import_aic.h"
