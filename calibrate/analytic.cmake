# calibrate/analytic: roofline profiles from GPU spec sheets (calibrate/gpus/), fitted efficiency
# factors, and profile diffs.
target_sources(isim_calibrate PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/analytic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/analytic_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/analytic_fit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/crosscheck.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_spec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/diff.cpp
)
