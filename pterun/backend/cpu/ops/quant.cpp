// Quantization on the CPU (ops/quant.h): quantize, dequantize,
// choose_qparams, the quantized add and the weight sums the integer GEMMs
// use. Values are computed exactly as ExecuTorch's kernels compute them
// (docs/quantization.md): the float32 reciprocal and nearbyint for
// quantizing, a float32 product for dequantizing. Parameters held in
// tensors are checked here, before anything is written.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/quant_quantize.h"
#include "pterun/backend/cpu/ops/quant_util.h"
#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/kernels/common/dtype_visit.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/quant_checks.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

/// Checks the parameters a tensor holds (quant ranges come from the op).
void check_tensor_params(const ops::QParams& q, int64_t quant_min, int64_t quant_max,
                         const char* op) {
  if (q.scales != nullptr) ops::check_scales(q.scales->data(), q.scales->dtype(), q.channels, op);
  if (q.zero_points != nullptr) {
    ops::check_zero_points(q.zero_points->data(), q.zero_points->dtype(), q.channels, quant_min,
                           quant_max, op);
  }
}

// ---- quantize -----------------------------------------------------------------

/// One parameter pair's reciprocal as the op computes it.
struct Recip {
  double inv;  // float32 or float64 value
  double zp;
};

template <typename In, typename Out>
void quantize_run(const ops::QuantizeArgs& a, const QParamReader& params, int64_t begin,
                  int64_t end) {
  const In* in = a.in.data_as<const In>();
  Out* out = a.out.data_as<Out>();
  const bool zp_first = a.rounding == ops::QRounding::ZeroPointFirst;
  const bool wide = zp_first && (std::is_same_v<In, double> ||
                                 (a.q.scales != nullptr && a.q.scales->dtype() == DType::Float64));
  for (int64_t m = begin; m < end;) {
    const int64_t block = m / a.q.inner;
    const int64_t stop = std::min(end, (block + 1) * a.q.inner);
    const int64_t c = block % a.q.channels;
    const double scale = params.scale(c);
    const auto zp = static_cast<int32_t>(params.zero_point(c));
    if (!zp_first) {
      const float inv = 1.0f / static_cast<float>(scale);
      const auto zpf = static_cast<float>(zp);
      int64_t i = m;
#if defined(__AVX2__)
      if constexpr (std::is_same_v<In, float> &&
                    (std::is_same_v<Out, int8_t> || std::is_same_v<Out, uint8_t>)) {
        i += quantize_f32_vec(in + m, out + m, stop - m, inv, zpf, static_cast<float>(a.quant_min),
                              static_cast<float>(a.quant_max));
      }
#endif
      for (; i < stop; ++i)
        out[i] = quantize_one<In, Out>(in[i], inv, zpf, a.quant_min, a.quant_max);
    } else if (wide) {
      const double inv = 1.0 / scale;
      for (int64_t i = m; i < stop; ++i) {
        const double s = static_cast<double>(in[i]) * inv + zp;
        out[i] = clamp_to<Out>(std::nearbyint(s), a.quant_min, a.quant_max);
      }
    } else {
      // torch: 1 / scales in the scales' dtype, the rest in float32.
      float inv = 1.0f / static_cast<float>(scale);
      if (a.q.scales != nullptr) inv = round_to_dtype(inv, a.q.scales->dtype());
      for (int64_t i = m; i < stop; ++i) {
        const float s = static_cast<float>(in[i]) * inv + static_cast<float>(zp);
        out[i] = clamp_to<Out>(std::nearbyint(s), a.quant_min, a.quant_max);
      }
    }
    m = stop;
  }
}

void quantize(KernelContext& ctx, const ops::QuantizeArgs& a) {
  const char* op = "quantize";
  check_tensor_params(a.q, a.quant_min, a.quant_max, op);
  const QParamReader params(a.q);
  kernels::visit_floating<kernels::HostTypes>(a.in.dtype(), "quant", [&]<typename In>() {
    kernels::visit_quant_int(a.out.dtype(), "quant", [&]<typename Out>() {
      parallel_for(ctx, a.in.numel(), 4, [&](int64_t begin, int64_t end) {
        quantize_run<In, Out>(a, params, begin, end);
      });
    });
  });
}

// ---- dequantize ---------------------------------------------------------------

template <typename In, typename Out>
void dequantize_run(const ops::DequantizeArgs& a, const QParamReader& params, int64_t begin,
                    int64_t end) {
  const In* in = a.in.data_as<const In>();
  Out* out = a.out.data_as<Out>();
  for (int64_t m = begin; m < end;) {
    const int64_t block = m / a.q.inner;
    const int64_t stop = std::min(end, (block + 1) * a.q.inner);
    const int64_t c = block % a.q.channels;
    const int64_t zp = params.zero_point(c);
    if (a.wide) {
      const double scale = params.scale(c);
      for (int64_t i = m; i < stop; ++i) {
        const double v = static_cast<double>(static_cast<int64_t>(in[i]) - zp) * scale;
        out[i] = static_cast<Out>(
            a.round_to == DType::Float32 ? v : round_to_dtype(static_cast<float>(v), a.round_to));
      }
    } else {
      const auto scale = static_cast<float>(params.scale(c));
      if (a.round_to == DType::Float32) {
        for (int64_t i = m; i < stop; ++i) {
          out[i] = static_cast<Out>(static_cast<float>(static_cast<int64_t>(in[i]) - zp) * scale);
        }
      } else {
        for (int64_t i = m; i < stop; ++i) {
          const float v = static_cast<float>(static_cast<int64_t>(in[i]) - zp) * scale;
          out[i] = static_cast<Out>(round_to_dtype(v, a.round_to));
        }
      }
    }
    m = stop;
  }
}

void dequantize(KernelContext& ctx, const ops::DequantizeArgs& a) {
  const char* op = "dequantize";
  check_tensor_params(a.q, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                      op);
  const QParamReader params(a.q);
  kernels::visit_quant_int(a.in.dtype(), "quant", [&]<typename In>() {
    kernels::visit_floating<kernels::HostTypes>(a.out.dtype(), "quant", [&]<typename Out>() {
      parallel_for(ctx, a.in.numel(), 2, [&](int64_t begin, int64_t end) {
        dequantize_run<In, Out>(a, params, begin, end);
      });
    });
  });
}

// ---- choose_qparams -----------------------------------------------------------

void choose_qparams(KernelContext& ctx, const ops::ChooseQParamsArgs& a) {
  const float* in = a.in.data_as<const float>();
  double* scale = a.scale_out.data_as<double>();
  int64_t* zero_point = a.zero_point_out.data_as<int64_t>();
  // Every row first, so that an error leaves both outputs unwritten.
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* row = in + r * a.row_size;
    float lo = 0, hi = 0;
    if (a.row_size > 0) lo = hi = row[0];
    bool finite = true;
    for (int64_t i = 0; i < a.row_size; ++i) {
      finite = finite && std::isfinite(row[i]);
      lo = std::min(lo, row[i]);
      hi = std::max(hi, row[i]);
    }
    PTERUN_CHECK(finite, ErrorCode::InvalidArgument, "choose_qparams: ",
                 a.rows > 1 ? str_cat("row ", r, " of the input") : std::string("the input"),
                 " holds a NaN or an infinity, which no quantization scale can represent");
  }
  parallel_for(ctx, a.rows, a.row_size + 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = in + r * a.row_size;
      float lo = 0, hi = 0;
      if (a.row_size > 0) lo = hi = row[0];
      for (int64_t i = 1; i < a.row_size; ++i) {
        lo = std::min(lo, row[i]);
        hi = std::max(hi, row[i]);
      }
      const ChosenQParams q = choose_scale_and_zero_point(lo, hi, static_cast<int32_t>(a.quant_min),
                                                          static_cast<int32_t>(a.quant_max));
      scale[r] = q.scale;
      zero_point[r] = q.zero_point;
    }
  });
}

// ---- quantized add ------------------------------------------------------------

template <typename T>
void add_run(const ops::QuantizedAddArgs& a, int64_t begin, int64_t end) {
  const T* x = a.a.data_as<const T>();
  const T* y = a.b.data_as<const T>();
  T* out = a.out.data_as<T>();
  const float inv = 1.0f / a.out_q.scale;
  const auto zp = static_cast<float>(a.out_q.zero_point);
  int64_t i = begin;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    // The scalar loop's operations, 16 lanes at a time.
    auto widen = [](const T* p) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      return std::is_same_v<T, int8_t> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
    };
    const __m512i za = _mm512_set1_epi32(a.a_q.zero_point),
                  zb = _mm512_set1_epi32(a.b_q.zero_point);
    const __m512 sa = _mm512_set1_ps(a.a_q.scale), sb = _mm512_set1_ps(a.b_q.scale);
    const __m512 vinv = _mm512_set1_ps(inv), vzp = _mm512_set1_ps(zp);
    const __m512 lo = _mm512_set1_ps(static_cast<float>(a.out_min));
    const __m512 hi = _mm512_set1_ps(static_cast<float>(a.out_max));
    for (; i + 16 <= end; i += 16) {
      const __m512 fx = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(widen(x + i), za)), sa);
      const __m512 fy = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(widen(y + i), zb)), sb);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       quantize16<T>(_mm512_add_ps(fx, fy), vinv, vzp, lo, hi));
    }
  }
#endif
  for (; i < end; ++i) {
    const float fx =
        static_cast<float>(static_cast<int64_t>(x[i]) - a.a_q.zero_point) * a.a_q.scale;
    const float fy =
        static_cast<float>(static_cast<int64_t>(y[i]) - a.b_q.zero_point) * a.b_q.scale;
    out[i] = clamp_to<T>(zp + std::nearbyint(inv * (fx + fy)), a.out_min, a.out_max);
  }
}

void quantized_add(KernelContext& ctx, const ops::QuantizedAddArgs& a) {
  kernels::visit_quant_int(a.a.dtype(), "quant", [&]<typename T>() {
    parallel_for(ctx, a.a.numel(), 4,
                 [&](int64_t begin, int64_t end) { add_run<T>(a, begin, end); });
  });
}

// ---- weight sums --------------------------------------------------------------

void weight_sums(KernelContext& ctx, const Tensor& weight, int64_t n, int64_t k, Tensor& out) {
  const int8_t* w = weight.data_as<const int8_t>();
  int32_t* sums = out.data_as<int32_t>();
  parallel_for(ctx, n, k, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int32_t s = 0;
      for (int64_t i = 0; i < k; ++i) s += w[r * k + i];
      sums[r] = s;
    }
  });
}

}  // namespace

const ops::QuantBackend& quant_backend() {
  static constexpr ops::QuantBackend kQuant = [] {
    ops::QuantBackend b = PTERUN_QUANT_BACKEND();
    b.dynamic_linear = &dynamic_linear;
    b.float_io = true;
    return b;
  }();
  return kQuant;
}

}  // namespace pterun::cpu
