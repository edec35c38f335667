// What `isim validate EXPERIMENT.yaml` does once its flags are read: the verb
// (experiments/cli/cli_validate.cpp) only translates flags into a ValidateRequest.
//
// Contract: run_validation loads the spec with its overrides; an executor other than live-cpu
// or live-cuda is an InputError. It creates the output folder (`out`, or
// default_out_dir(NAME-validate, overrides)); with `calibrate_first` it calibrates
// validate.model on the executor's backend (up to 3 attempts while the whole-batch validation
// error is above 5%, keeping the best) into OUT/profile.yaml and validates against that profile.
// Then per policy it runs the live executor and `sim` (OUT/POLICY/live, OUT/POLICY/sim), prints
// both and the relative error per metric, the host load and the integrity checks; compares the
// policies' token streams; writes OUT/validation.csv and prints the mean |error| of the latency
// means. Returns 1 when an integrity check failed, the token streams differ, or the comparison
// is noisy (calibration off its target, host loaded) without `accept_noisy`; 0 otherwise.
#pragma once

#include <string>
#include <vector>

namespace isim::exp {

struct ValidateRequest {
  std::string spec;                    // EXPERIMENT.yaml
  std::vector<std::string> overrides;  // -p / --add, in order
  std::string out;                     // --out; "" = results/<name>-validate[-<overrides>]
  bool calibrate_first = false;
  bool accept_noisy = false;
  bool check_invariants = false;
};

int run_validation(const ValidateRequest& r);

}  // namespace isim::exp
