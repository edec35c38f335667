# calibrate/importers: sources added by target_sources(isim_calibrate PRIVATE ...).
# Profile importers for public measurements (isim profile import --from ...).
target_sources(isim_calibrate PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/import_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vllm_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_llmservingsim.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_aiconfigurator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/import_allreduce.cpp
)
