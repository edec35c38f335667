#include "policies/waste.h"

#include <algorithm>
#include <cmath>

namespace isim::policy {

double waste_preserve(double t_hat_s, double C) {
  return t_hat_s * C;
}

double waste_discard(double T_of_C_s, double C, double M) {
  return T_of_C_s * (C + M);
}

double waste_discard_chunked(double C, double S, double R, double M, double T_of_S_s, double a_s) {
  if (C <= 0) return 0;
  const double c = std::max(S - R, 1.0);
  const double n = std::ceil(C / c);
  return T_of_S_s * c * n * (n + 1) / 2 + n * a_s * c * M;
}

double waste_swap_sync(double t_out_s, double t_in_s, double C, double M) {
  return (t_out_s + t_in_s) * (C + M);
}

}  // namespace isim::policy
