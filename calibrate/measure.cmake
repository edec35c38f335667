# calibrate/measure: sources added by target_sources(isim_calibrate PRIVATE ...).
# The runner (kernels/runner) measures; isim-calibrate is the front end. `--backend cuda` loads
# the CUDA module (kernels/runner/cuda_module.h) when it is built.
target_sources(isim_calibrate PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/knee.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/measure.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/measure_backend.cpp
)
target_link_libraries(isim_calibrate PUBLIC isim_runner)
target_compile_definitions(isim_calibrate PRIVATE
  ISIM_CALIBRATE_VERSION="${PROJECT_VERSION}")

add_executable(isim-calibrate ${CMAKE_CURRENT_SOURCE_DIR}/calibrate_main.cpp)
# core/ has out_path.h (--out is checked before minutes of measuring) and the CLI helpers;
# no experiments code.
target_link_libraries(isim-calibrate PRIVATE isim_calibrate isim_core Boost::program_options fmt::fmt
                      isim_warnings)
set_target_properties(isim-calibrate PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
if(ISIM_HAVE_CUDA)
  add_dependencies(isim-calibrate isim_cuda)
endif()
