#pragma once

// ExecuTorch's choice of quantization parameters (fbgemm's
// ChooseQuantizationParams, as kernels/quantized/cpu/op_choose_qparams.cpp
// computes it) and XNNPACK's dynamic int8 rule (qd8), written once for the
// CPU and the CUDA backend: standard headers only, and host-and-device
// functions under nvcc.

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define PTERUN_HOST_DEVICE __host__ __device__
#else
#define PTERUN_HOST_DEVICE
#endif

namespace pterun::kernels {

struct ChosenQParams {
  double scale;
  int32_t zero_point;
};

/// Scales below this are raised to it, and the range widened to match.
inline constexpr float kSmallScale = 6.1e-5f;

/// The scale and zero point for values in [lo, hi] (finite) quantized to
/// [qmin, qmax] (qmin < qmax): the range is widened to hold 0, the scale
/// is (hi - lo) / (qmax - qmin) in double (0.1 when it would be 0 or have
/// an infinite float32 reciprocal, at least kSmallScale), and the zero
/// point is taken from whichever end gives the smaller error, clamped and
/// rounded to nearest even in float32. Every operation in ExecuTorch's
/// order and precision.
PTERUN_HOST_DEVICE inline ChosenQParams choose_scale_and_zero_point(float lo, float hi,
                                                                    int32_t qmin, int32_t qmax) {
  lo = lo < 0.f ? lo : 0.f;
  hi = hi > 0.f ? hi : 0.f;
  double scale = (static_cast<double>(hi) - lo) / (qmax - qmin);
  // A float32 reciprocal above FLT_MAX is infinite.
  if (static_cast<float>(scale) == 0.0f || 1.0f / static_cast<float>(scale) > 3.40282347e+38f) {
    scale = 0.1;
  }
  if (scale < kSmallScale) {
    const auto org_scale = static_cast<float>(scale);
    scale = kSmallScale;
    if (lo == 0.0f) {
      hi = kSmallScale * (qmax - qmin);
    } else if (hi == 0.0f) {
      lo = -kSmallScale * (qmax - qmin);
    } else {
      const float amplifier = kSmallScale / org_scale;
      lo *= amplifier;
      hi *= amplifier;
    }
  }
  const double from_min = qmin - lo / scale;
  const double from_max = qmax - hi / scale;
  const double from_min_error = (qmin < 0 ? -qmin : qmin) - ::fabs(lo / scale);
  const double from_max_error = (qmax < 0 ? -qmax : qmax) - ::fabs(hi / scale);
  const double initial = from_min_error < from_max_error ? from_min : from_max;
  int32_t zero_point;
  if (initial < qmin) {
    zero_point = qmin;
  } else if (initial > qmax) {
    zero_point = qmax;
  } else {
    zero_point = static_cast<int32_t>(::nearbyintf(static_cast<float>(initial)));
  }
  return {scale, zero_point};
}

/// float32 products, sums and quotients rounded once each, on the host and
/// on a GPU (nvcc fuses a multiply and an add unless told not to; a host
/// file that uses these is built with -ffp-contract=off).
PTERUN_HOST_DEVICE inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PTERUN_HOST_DEVICE inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
PTERUN_HOST_DEVICE inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

/// XNNPACK's dynamic int8 quantization (qd8) of one slice: x ~ (q -
/// zero_point) * scale, q = clamp(rint(x * inv) + zero_point, -128, 127).
struct Qd8Params {
  float inv;
  float scale;
  int32_t zero_point;
};

/// The qd8 parameters of a slice whose finite values span [lo, hi]: the
/// range widened to hold 0, 255 steps over it, the zero point from the end
/// with the smaller error (XNNPACK's xnn_qd8_asymmetric_quantization_params),
/// every operation in float32.
PTERUN_HOST_DEVICE inline Qd8Params choose_qd8(float lo, float hi) {
  const float rmin = lo < 0.0f ? lo : 0.0f, rmax = hi > 0.0f ? hi : 0.0f;
  const float inv = rmin == rmax ? 1.0f : div_rn(255.0f, add_rn(rmax, -rmin));
  const float dmin = mul_rn(rmin, inv), dmax = mul_rn(rmax, inv);
  float zp = add_rn(add_rn(-128.0f, dmin), add_rn(127.0f, dmax)) > 0.0f ? add_rn(-128.0f, -dmin)
                                                                        : add_rn(127.0f, -dmax);
  zp = zp < -128.0f ? -128.0f : (zp > 127.0f ? 127.0f : zp);
  return {inv, div_rn(1.0f, inv), static_cast<int32_t>(::nearbyintf(zp))};
}

/// q of a finite x under p, in [-128, 127].
PTERUN_HOST_DEVICE inline int32_t quantize_qd8(float x, const Qd8Params& p) {
  const float q = add_rn(::nearbyintf(mul_rn(x, p.inv)), static_cast<float>(p.zero_point));
  return static_cast<int32_t>(q < -128.0f ? -128.0f : (q > 127.0f ? 127.0f : q));
}

/// Field j of a row of 4-bit or 2-bit embedding weights, as the signed
/// value it stands for. ExecuTorch's packing: 4-bit fields high nibble
/// first, offset by 8; 2-bit fields lowest bits first, offset by 2.
PTERUN_HOST_DEVICE inline float packed_field(const uint8_t* row, int64_t j, int bits) {
  if (bits == 4) {
    const uint8_t byte = row[j >> 1];
    return static_cast<float>(((j & 1) ? (byte & 0x0F) : (byte >> 4)) - 8);
  }
  const uint8_t byte = row[j >> 2];
  return static_cast<float>(((byte >> (2 * (j & 3))) & 3) - 2);
}

}  // namespace pterun::kernels
