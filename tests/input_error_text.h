// The message of the InputError a call raises, for tests that compare error texts exactly.
#pragma once

#include <functional>
#include <string>

#include "core/input_error.h"

namespace isim::test {

inline std::string error_of_call(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace isim::test
