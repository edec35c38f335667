# tests for calibrate/analytic: the roofline against hand-computed values, fitting, profile diff,
# and the `isim profile analytic|diff|show --plot` command lines (which run the built binary).
isim_test(test_calibrate_analytic LIBS isim_experiments isim_calibrate SOURCES
  calibrate/test_analytic.cpp
  calibrate/test_gpu_spec.cpp
  calibrate/test_analytic_moe.cpp
  calibrate/test_analytic_models.cpp
  calibrate/test_analytic_mla.cpp
  calibrate/test_crosscheck.cpp
  calibrate/test_diff.cpp
  calibrate/test_cli_profile.cpp
)
add_dependencies(test_calibrate_analytic isim)
