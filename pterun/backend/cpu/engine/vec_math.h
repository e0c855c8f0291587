#pragma once

// Branch-free float versions of the transcendental activations (sigmoid,
// silu, tanh, erf-form gelu). libm's expf/erff are calls that keep the
// elementwise loops scalar; these are plain arithmetic and selects, which
// GCC vectorises inside those loops. Accuracy: a few ulp (the activation
// tests hold them to rtol 2e-6 against float64 references).

#include <cstdint>
#include <cstring>

namespace pterun::cpu::vec_math {

/// e^x for x <= 88: 0 below -87.3 (where the result would be subnormal),
/// NaN for NaN. Range reduction x = n ln2 + r, |r| <= ln2 / 2, then a
/// degree-6 Taylor polynomial (error below 2e-7 relative) scaled by 2^n.
inline float exp_bounded(float x) {
  const float xc = x < -87.3f ? -87.3f : x;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float k = xc * 1.44269504088896341f + kRound;
  const float n = k - kRound;
  float r = xc - n * 0.693145751953125f;  // ln2 in two parts, exact product first
  r -= n * 1.42860682030941723212e-6f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  uint32_t bits;
  std::memcpy(&bits, &k, sizeof bits);
  bits = (bits - 0x4B400000u + 127u) << 23;  // n + 127 in the exponent field
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return x < -87.3f ? 0.0f : p * scale;
}

/// 1 / (1 + e^-x), from e^-|x| so that nothing overflows.
inline float sigmoid(float x) {
  const float e = exp_bounded(x < 0 ? x : -x);
  const float s = 1.0f / (1.0f + e);
  return x >= 0 ? s : e * s;
}

/// tanh(x): for |x| < 0.4 its odd Taylor series to x^15 (the next term is
/// below 1e-9 of the result), else (1 - e^-2|x|) / (1 + e^-2|x|) with the
/// sign of x (e^-2|x| at most 0.45 there, so the difference keeps its
/// relative accuracy); 1 in magnitude from 44 on, NaN for NaN.
inline float tanh(float x) {
  const float a = x < 0 ? -x : x;
  const float x2 = x * x;
  float p = -929569.0f / 638512875.0f;
  p = p * x2 + 21844.0f / 6081075.0f;
  p = p * x2 - 1382.0f / 155925.0f;
  p = p * x2 + 62.0f / 2835.0f;
  p = p * x2 - 17.0f / 315.0f;
  p = p * x2 + 2.0f / 15.0f;
  p = p * x2 - 1.0f / 3.0f;
  const float small = x2 == 0 ? x : x + x * x2 * p;  // x itself keeps -0's sign
  const float t = exp_bounded(-2.0f * a);
  const float r = (1.0f - t) / (1.0f + t);
  const float large = x < 0 ? -r : r;
  return a < 0.4f ? small : large;
}

/// erfc(z) for z >= 0 (or NaN): the Chebyshev fit of Numerical Recipes'
/// erfcc, whose fractional error is below 1.2e-7 everywhere, so the tail
/// keeps its relative accuracy.
inline float erfc_nonnegative(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * exp_bounded(p - z * z);
}

/// x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)), with 1 + erf taken as
/// erfc(|z|) or 2 - erfc(|z|); -inf and every x below -30 give 0.
inline float gelu_erf(float x) {
  const float z = (x < 0 ? -x : x) * 0.70710678118654752f;
  const float c = erfc_nonnegative(z);
  const float r = 0.5f * x * (x >= 0 ? 2.0f - c : c);
  return x < -30.0f ? 0.0f : r;
}

}  // namespace pterun::cpu::vec_math
