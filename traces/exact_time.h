// Times as the CSV traces write them (traces/azure.h, traces/burstgpt.h), read without floating
// point, so that an arrival (a row's time minus the first row's) is exact to the digits given.
//
// Contract:
// - An ExactTime is whole `seconds` plus a decimal fraction `fraction` / 10^digits, 0 <= digits
//   <= kMaxFractionDigits (18) and 0 <= fraction < 10^digits. Digits past the 18th are read and
//   dropped: they are below 10^-18 s, a billionth of the simulator's nanosecond (sim/time.h).
// - parse_date_time reads "YYYY-MM-DD HH:MM:SS[.DIGITS][Z|+HH:MM|-HH:MM]" (a 'T' may stand for
//   the space, an offset may be written +HHMM) as seconds since 1970-01-01 00:00:00 UTC
//   (negative before), the offset subtracted. Years 0001-9999, months 1-12, days of the month
//   as the Gregorian calendar has them, hours 0-23, minutes and seconds 0-59 (no leap second),
//   offsets up to 23:59. It returns "" or why the text is not such a time, ending in ", got
//   'TEXT'" (TEXT quoted as in csv_rows.h): kDateTimeExpected, with a reason in parentheses
//   when the shape is right but a field is not ("month 13", "day 30 of 2023-02", "hour 24",
//   "offset +24:00", "year 0000").
// - parse_seconds reads a non-negative decimal "DIGITS[.DIGITS]" (no sign, no exponent, no
//   spaces) of at most 4e9 seconds (traces/limits.h); it returns "", kSecondsExpected + ", got
//   'TEXT'", or the too_many_seconds reason for a larger value.
// - seconds_between(a, b) is b - a in seconds: the exact difference rounded once to the nearest
//   double when it is below 2^53 units of the finer fraction (always for the traces we read: a
//   week in 10^-7 s units is 6e12), else within a few ulps.
// - before(a, b): a < b, exactly.
#pragma once

#include <cstdint>
#include <string>

namespace isim::trace {

inline constexpr int kMaxFractionDigits = 18;

struct ExactTime {
  int64_t seconds = 0;
  int64_t fraction = 0;  // in units of 10^-digits s
  int digits = 0;
};

inline constexpr const char* kDateTimeExpected =
    "expected a date and time YYYY-MM-DD HH:MM:SS[.DIGITS][Z|+HH:MM|-HH:MM]";
inline constexpr const char* kSecondsExpected = "expected seconds, a decimal number >= 0";

std::string parse_date_time(const std::string& text, ExactTime* out);
std::string parse_seconds(const std::string& text, ExactTime* out);
double seconds_between(const ExactTime& a, const ExactTime& b);
bool before(const ExactTime& a, const ExactTime& b);

}  // namespace isim::trace
