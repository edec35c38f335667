// import_aiconfigurator with the input as the system spec h200_sxm.yaml
// (tests/fuzz/fuzz_import_aic.h).
#define ISIM_FUZZ_FILE "h200_sxm.yaml"
#include "tests/fuzz/fuzz_import_aic.h"
