// Waste estimators of InferCept's min-waste policy ("Min-waste, precisely" in the design).
//
// Waste is GPU memory left idle times how long it sits idle, in token-seconds (multiply by KV
// bytes per token for byte-seconds). Inputs are plain numbers taken from the profile and the
// engine state, so nothing here knows a model:
//   C    context tokens the paused session holds      T_hat  estimated remaining intercept (s)
//   M    KV tokens held by running sessions           R      decode tokens in the batch
//   S    saturation tokens (profile)                  a      marginal seconds per token
//   T(x) iteration seconds for x batched tokens (profile)
// Contract: pure functions, no side effects; non-negative inputs give non-negative waste.
#pragma once

#include <cstdint>

namespace isim::policy {

// Preserve: the context sits idle for the rest of the intercept. W_p = T_hat * C.
double waste_preserve(double t_hat_s, double C);

// Discard, unchunked: recomputing C tokens in one iteration stalls everyone.
// W_d = T(C) * (C + M).
double waste_discard(double T_of_C_s, double C, double M);

// Discard with chunked recompute: chunk c = max(S - R, 1), n = ceil(C / c) iterations.
// W_dc = T(S) * c * n(n+1)/2 + n * a * c * M. The first term is the partly rebuilt KV held
// while it is not yet useful, the second the marginal delay the chunks impose on the others.
double waste_discard_chunked(double C, double S, double R, double M, double T_of_S_s, double a_s);

// Synchronous swap: the transfer out and back in stalls everyone.
// W_s = (t_out(C) + t_in(C)) * (C + M).
double waste_swap_sync(double t_out_s, double t_in_s, double C, double M);

}  // namespace isim::policy
