# `isim run --metrics` through promtool (Debian's prometheus, installed by scripts/deps --test):
# its own main exits 77 without promtool, reported as skipped (SKIP_RETURN_CODE), never passed.
add_executable(test_openmetrics_promtool experiments/test_openmetrics_promtool.cpp)
target_link_libraries(test_openmetrics_promtool PRIVATE isim_experiments doctest::doctest
  isim_warnings)
target_compile_definitions(test_openmetrics_promtool PRIVATE ISIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  ISIM_BINARY_DIR="${PROJECT_BINARY_DIR}")
add_dependencies(test_openmetrics_promtool isim)  # the fleet case runs the real binary
add_test(NAME test_openmetrics_promtool COMMAND test_openmetrics_promtool)
set_tests_properties(test_openmetrics_promtool PROPERTIES SKIP_RETURN_CODE 77)
