// InputError: the one exception type for bad user input anywhere in intercept-sim.
//
// Contract: the message already names where the problem is (`file:line: field: reason`, or
// `file: key: reason`) and what was expected. Front ends catch it, print the message and exit
// with code 2. Nothing else in the code base exits on bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace isim {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace isim
