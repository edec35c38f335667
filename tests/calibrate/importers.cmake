# tests for calibrate/importers: isim_test(...) blocks.
isim_test(test_calibrate_import LIBS isim_calibrate SOURCES
  calibrate/test_import_knee.cpp
  calibrate/test_import_llmservingsim.cpp
  calibrate/test_import_llmservingsim_tp.cpp
  calibrate/test_import_aiconfigurator.cpp
  calibrate/test_import_cli.cpp
  calibrate/test_vllm_memory.cpp
  calibrate/test_vllm_startup_log.cpp
  calibrate/test_kv_logs.cpp
  calibrate/test_hf_config.cpp
  calibrate/test_hf_config_shared.cpp
  calibrate/test_hf_config_moe.cpp
  calibrate/test_hf_config_guards.cpp
  calibrate/test_model_cli.cpp
)
# test_import_cli.cpp runs the real isim binary.
add_dependencies(test_calibrate_import isim)
