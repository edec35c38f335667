#include "traces/exact_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "traces/csv_rows.h"
#include "traces/limits.h"

namespace isim::trace {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// The `n` digits of `t` from `at` as an integer; false when `t` is shorter or one is no digit.
bool read_digits(const std::string& t, size_t at, size_t n, int64_t* v) {
  if (at + n > t.size()) return false;
  int64_t x = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (!is_digit(t[i])) return false;
    x = x * 10 + (t[i] - '0');
  }
  *v = x;
  return true;
}

// ".DIGITS" at `at`, when there, into out's fraction (the first 18 digits kept); the index
// after it, or std::string::npos for a '.' with no digit after it.
size_t read_fraction(const std::string& t, size_t at, ExactTime* out) {
  out->fraction = 0;
  out->digits = 0;
  if (at >= t.size() || t[at] != '.') return at;
  size_t i = at + 1;
  for (; i < t.size() && is_digit(t[i]); ++i)
    if (out->digits < kMaxFractionDigits) {
      out->fraction = out->fraction * 10 + (t[i] - '0');
      ++out->digits;
    }
  return i == at + 1 ? std::string::npos : i;
}

int64_t pow10(int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int64_t days_in_month(int64_t y, int64_t m) {
  static constexpr std::array<int64_t, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : kDays[static_cast<size_t>(m - 1)];
}

// Days from 0001-01-01 to the first day of year y (proleptic Gregorian calendar).
int64_t days_before_year(int64_t y) {
  const int64_t p = y - 1;
  return p * 365 + p / 4 - p / 100 + p / 400;
}

// Seconds from 1970-01-01 00:00:00 to the start of that day.
int64_t day_start(int64_t y, int64_t m, int64_t d) {
  int64_t days = days_before_year(y) - days_before_year(1970) + d - 1;
  for (int64_t k = 1; k < m; ++k) days += days_in_month(y, k);
  return days * 86400;
}

std::string out_of_range(const std::string& what) {
  return fmt::format("{} ({})", kDateTimeExpected, what);
}

// The offset "Z", "+HH:MM", "-HH:MM" or "+HHMM" from `at` to the end of `t`, in seconds east of
// UTC; "" or why not.
std::string read_offset(const std::string& t, size_t at, int64_t* east) {
  *east = 0;
  if (at == t.size()) return "";
  if (t[at] == 'Z' && at + 1 == t.size()) return "";
  if (t[at] != '+' && t[at] != '-') return kDateTimeExpected;
  int64_t hh = 0, mm = 0;
  const bool colon = at + 3 < t.size() && t[at + 3] == ':';
  const size_t min_at = at + (colon ? 4 : 3);
  if (!read_digits(t, at + 1, 2, &hh) || !read_digits(t, min_at, 2, &mm) || min_at + 2 != t.size())
    return kDateTimeExpected;
  if (hh > 23 || mm > 59) return out_of_range(fmt::format("offset {}", t.substr(at)));
  *east = (t[at] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
  return "";
}

}  // namespace

namespace {

std::string date_time_problem(const std::string& t, ExactTime* out) {
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const bool shaped = t.size() >= 19 && read_digits(t, 0, 4, &y) && t[4] == '-' &&
                      read_digits(t, 5, 2, &mo) && t[7] == '-' && read_digits(t, 8, 2, &d) &&
                      (t[10] == ' ' || t[10] == 'T') && read_digits(t, 11, 2, &h) && t[13] == ':' &&
                      read_digits(t, 14, 2, &mi) && t[16] == ':' && read_digits(t, 17, 2, &s);
  if (!shaped) return kDateTimeExpected;
  ExactTime e;
  const size_t after = read_fraction(t, 19, &e);
  if (after == std::string::npos) return kDateTimeExpected;
  int64_t east = 0;
  if (std::string why = read_offset(t, after, &east); !why.empty()) return why;
  if (y < 1) return out_of_range("year 0000");
  if (mo < 1 || mo > 12) return out_of_range(fmt::format("month {}", mo));
  if (d < 1 || d > days_in_month(y, mo))
    return out_of_range(fmt::format("day {} of {}", d, t.substr(0, 7)));
  if (h > 23) return out_of_range(fmt::format("hour {}", h));
  if (mi > 59) return out_of_range(fmt::format("minute {}", mi));
  if (s > 59) return out_of_range(fmt::format("second {}", s));
  e.seconds = day_start(y, mo, d) + h * 3600 + mi * 60 + s - east;
  *out = e;
  return "";
}

}  // namespace

std::string parse_date_time(const std::string& t, ExactTime* out) {
  const std::string why = date_time_problem(t, out);
  return why.empty() ? why : why + ", got " + csv_rows::cell_text(t);
}

std::string parse_seconds(const std::string& t, ExactTime* out) {
  size_t i = 0;
  int64_t whole = 0;
  bool too_big = false;
  for (; i < t.size() && is_digit(t[i]); ++i) {
    if (whole > static_cast<int64_t>(kMaxSeconds)) too_big = true;
    if (!too_big) whole = whole * 10 + (t[i] - '0');
  }
  ExactTime e;
  if (i == 0 || read_fraction(t, i, &e) != t.size())
    return std::string(kSecondsExpected) + ", got " + csv_rows::cell_text(t);
  if (too_big || whole > static_cast<int64_t>(kMaxSeconds) ||
      (whole == static_cast<int64_t>(kMaxSeconds) && e.fraction > 0))
    return too_many_seconds(csv_rows::cell_text(t));
  e.seconds = whole;
  *out = e;
  return "";
}

double seconds_between(const ExactTime& a, const ExactTime& b) {
  const int digits = std::max(a.digits, b.digits);
  const int64_t unit = pow10(digits);
  int64_t whole = b.seconds - a.seconds;
  int64_t part = b.fraction * pow10(digits - b.digits) - a.fraction * pow10(digits - a.digits);
  if (part < 0) {  // now b - a = whole + part / unit with 0 <= part < unit
    whole -= 1;
    part += unit;
  }
  // |whole * unit + part| < 2^53: an integer a double holds, so one division rounds once.
  const int64_t limit = (int64_t{1} << 53) / unit - 1;
  if (whole > -limit && whole < limit)
    return static_cast<double>(whole * unit + part) / static_cast<double>(unit);
  return static_cast<double>(whole) + static_cast<double>(part) / static_cast<double>(unit);
}

bool before(const ExactTime& a, const ExactTime& b) {
  if (a.seconds != b.seconds) return a.seconds < b.seconds;
  const int digits = std::max(a.digits, b.digits);
  return a.fraction * pow10(digits - a.digits) < b.fraction * pow10(digits - b.digits);
}

}  // namespace isim::trace
