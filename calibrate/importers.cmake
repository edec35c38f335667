# calibrate/importers: sources added by target_sources(isim_calibrate PRIVATE ...).
# Profile importers for public measurements (isim profile import --from ...).
target_sources(isim_calibrate PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/import_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vllm_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_llmservingsim.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_llmservingsim_meta.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_llmservingsim_moe.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_llmservingsim_tp.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_aiconfigurator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_allreduce.cpp
)
# isim validate --kv-logs: vLLM startup logs against the KV capacity rule.
target_sources(isim_calibrate PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/vllm_startup_log.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kv_logs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kv_logs_models.cpp
)
# Hugging Face config.json -> model YAML (isim model import).
target_sources(isim_calibrate PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/hf_config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hf_config_params.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hf_config_shapes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hf_config_moe.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hf_config_quant.cpp
  ${CMAKE_CURRENT_LIST_DIR}/hf_model_yaml.cpp
)
target_link_libraries(isim_calibrate PRIVATE nlohmann_json::nlohmann_json)
