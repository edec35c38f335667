// import_aiconfigurator with the input as gemm_perf.csv (tests/fuzz/fuzz_import_aic.h).
#define ISIM_FUZZ_FILE "gemm_perf.csv"
#include "tests/fuzz/fuzz_import_aic.h"
