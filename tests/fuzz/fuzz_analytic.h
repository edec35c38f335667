// What the model and GPU-spec harnesses do with a file the reader accepted: what `isim profile
// analytic` does with it (analytic_profile on the other half from calibrate/), whose profile must
// then load back equal. analytic_profile may refuse the pair with an InputError of its own.
#pragma once

#include "calibrate/analytic.h"
#include "calibrate/model.h"
#include "tests/fuzz/fuzz_profile_check.h"

namespace isim::fuzz {

inline void check_analytic(const calib::GpuSpec& gpu, const calib::ModelSpec& model,
                           const std::string& model_path) {
  sim::Profile p;
  if (!accepted([&] { p = calib::analytic_profile(gpu, model, model_path, calib::Efficiency{}); }))
    return;
  check_profile_round_trip(p);
}

}  // namespace isim::fuzz
