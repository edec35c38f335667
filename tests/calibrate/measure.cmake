# tests for calibrate/measure: isim_test(...) blocks.
# The runner's CPU suite lives here too (tests/kernels/), so tests/CMakeLists.txt needs no edit.
isim_test(test_runner LABELS threads LIBS isim_runner SOURCES kernels/test_runner_cpu.cpp)
isim_test(test_calibrate_measure LIBS isim_calibrate isim_experiments SOURCES
  calibrate/test_knee.cpp
  calibrate/test_calibrate_cpu.cpp
)
# The CUDA runner suite: label gpu, skipped (exit 77) without a device, as test_kernels_gpu.
if(ISIM_HAVE_CUDA)
  add_executable(test_runner_gpu kernels/gpu_main.cpp kernels/test_runner_gpu.cpp)
  target_link_libraries(test_runner_gpu PRIVATE isim_runner_cuda doctest::doctest isim_warnings)
  add_test(NAME test_runner_gpu COMMAND test_runner_gpu)
  set_tests_properties(test_runner_gpu PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endif()
