// XNNPACK's dynamically quantized fully connected layer on the CPU
// (ops::QDynLinearArgs): the activations quantized to int8 per slice of
// rows with XNNPACK's parameter rule, then integer dot products with the
// weights as the file stores them (int8 rows, or 4-bit rows of two values a
// byte), one float multiply per block.
//
// 8-bit weights go through the int8 GEMM the static kernels use
// (quant_gemm.h); 4-bit weights through their own kernels
// (quant_dynamic_4bit.cpp).

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "pterun/backend/cpu/engine/fetch_ahead.h"
#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/quant_dynamic.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_panels.h"
#include "pterun/backend/cpu/ops/quant_quantize.h"
#include "pterun/backend/cpu/ops/quant_util.h"
#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"
#include "pterun/kernels/common/device_check.h"
#include "pterun/kernels/common/quant_math.h"
#include "pterun/ops/quant.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;
using kernels::quantize_qd8;
using qdyn::kChunk;
using qdyn::RowQuant;

/// lo and hi of n > 0 floats; false when one is NaN or infinite (lo and hi
/// then mean nothing).
bool range_of(const float* x, int64_t n, float& lo, float& hi) {
  float l = x[0], h = x[0];
  bool finite = true;
  int64_t e = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if (n >= 16) {
    __m512 vl = _mm512_loadu_ps(x), vh = vl;
    const __m512 most = _mm512_set1_ps(std::numeric_limits<float>::max());
    __mmask16 ok = 0xFFFF;  // |v| <= FLT_MAX is false for NaN and infinities
    for (; e + 16 <= n; e += 16) {
      const __m512 v = _mm512_loadu_ps(x + e);
      vl = _mm512_min_ps(vl, v);
      vh = _mm512_max_ps(vh, v);
      ok &= _mm512_cmp_ps_mask(_mm512_abs_ps(v), most, _CMP_LE_OQ);
    }
    l = _mm512_reduce_min_ps(vl);
    h = _mm512_reduce_max_ps(vh);
    finite = ok == 0xFFFF;
  }
#endif
  for (; e < n; ++e) {
    l = std::min(l, x[e]);
    h = std::max(h, x[e]);
    finite = finite && std::isfinite(x[e]);
  }
  lo = l;
  hi = h;
  return finite;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/// quantize_qd8() of 16 floats, as int8 bytes (quantize16: the same float
/// operations, so the same bytes).
inline __m128i quantize16(__m512 v, const RowQuant& p) {
  return cpu::quantize16<int8_t>(v, _mm512_set1_ps(p.inv),
                                 _mm512_set1_ps(static_cast<float>(p.zero_point)),
                                 _mm512_set1_ps(-128.0f), _mm512_set1_ps(127.0f));
}
#endif

/// One row of k floats quantized with p into qr, stored as `bytes` says.
void quantize_row(const float* xr, int64_t k, const RowQuant& p, qdyn::RowBytes bytes,
                  uint8_t* qr) {
  const bool interleave = bytes == qdyn::RowBytes::Interleaved;
  const bool shifted = bytes == qdyn::RowBytes::Shifted;
  int64_t e = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m128i shift = _mm_set1_epi8(static_cast<char>(0x80));
  if (interleave) {
    const __m512i evens =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odds =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t c = 0; c < k; c += kChunk) {
      for (int64_t g = 0; g < kChunk / 32; ++g) {
        const __m512 a = _mm512_loadu_ps(xr + c + 32 * g),
                     b = _mm512_loadu_ps(xr + c + 32 * g + 16);
        const __m128i qe = quantize16(_mm512_permutex2var_ps(a, evens, b), p);
        const __m128i qo = quantize16(_mm512_permutex2var_ps(a, odds, b), p);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + c + 16 * g), _mm_xor_si128(qe, shift));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + c + kChunk / 2 + 16 * g),
                         _mm_xor_si128(qo, shift));
      }
    }
    return;
  }
  const __m128i flip = shifted ? shift : _mm_setzero_si128();
  for (; e + 16 <= k; e += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + e),
                     _mm_xor_si128(quantize16(_mm512_loadu_ps(xr + e), p), flip));
  }
#endif
  if (!interleave) {
    const int offset = shifted ? 128 : 0;
    for (; e < k; ++e) qr[e] = static_cast<uint8_t>(quantize_qd8(xr[e], p) + offset);
    return;
  }
  for (int64_t c = 0; c < k; c += kChunk) {
    for (int64_t i = 0; i < kChunk / 2; ++i) {
      qr[c + i] = static_cast<uint8_t>(quantize_qd8(xr[c + 2 * i], p) + 128);
      qr[c + kChunk / 2 + i] = static_cast<uint8_t>(quantize_qd8(xr[c + 2 * i + 1], p) + 128);
    }
  }
}

}  // namespace

void qdyn::quantize_rows(KernelContext& ctx, const ops::QDynLinearArgs& a, uint8_t* q, int64_t ld,
                         RowBytes bytes, RowQuant* params) {
  const float* x = a.in.data_as<const float>();
  const int64_t k = a.k, slices = a.m / a.slice_rows;
  const int64_t per_slice = a.slice_rows * k;
  std::atomic<int64_t> bad{-1};
  parallel_for(ctx, slices, per_slice * 2, [&](int64_t begin, int64_t end) {
    // Up to 16 slices at a time, in three passes (their ranges, their
    // parameters, their bytes), so that the slices' chains of dependent
    // steps overlap.
    constexpr int64_t kBatch = 16;
    float lo[kBatch], hi[kBatch];
    bool finite[kBatch];
    for (int64_t b0 = begin; b0 < end; b0 += kBatch) {
      const int64_t count = std::min(kBatch, end - b0);
      for (int64_t i = 0; i < count; ++i) {
        finite[i] = range_of(x + (b0 + i) * per_slice, per_slice, lo[i], hi[i]);
      }
      for (int64_t i = 0; i < count; ++i) {
        if (finite[i]) params[(b0 + i) * a.slice_rows] = kernels::choose_qd8(lo[i], hi[i]);
      }
      for (int64_t i = 0; i < count; ++i) {
        const int64_t first = (b0 + i) * a.slice_rows;
        if (!finite[i]) {
          bad.store(b0 + i, std::memory_order_relaxed);
          continue;
        }
        for (int64_t r = first; r < first + a.slice_rows; ++r) {
          if (r != first) params[r] = params[first];
          quantize_row(x + r * k, k, params[r], bytes, q + r * ld);
        }
      }
    }
  });
  const int64_t s = bad.load(std::memory_order_relaxed);
  if (s >= 0) {
    kernels::throw_device_check(kernels::DeviceCheckKind::NonFiniteSlice,
                                kernels::DeviceCheckOp::FullyConnectedDq, s, slices);
  }
}

namespace {

// ---- 8-bit weights ---------------------------------------------------------------

/// out[j] = clamp((acc[j] - (zero_point + 128) * sums[j]) * scales[j] *
/// p.scale + bias[j]) for a run of n outputs of one row whose sums `acc`
/// are of its bytes q + 128, in int32 (the exact sum fits) and float32 as
/// `finish` rounds; a loop GCC vectorises.
void finish_8bit_run(const int32_t* acc, const int32_t* sums, const float* scales,
                     const float* bias, const RowQuant& p, float lo, float hi, int64_t n,
                     float* out) {
  const auto zp = static_cast<uint32_t>(p.zero_point + 128);
  const float row_scale = p.scale;
  auto value = [&](int64_t j) {
    const auto exact =
        static_cast<int32_t>(static_cast<uint32_t>(acc[j]) - zp * static_cast<uint32_t>(sums[j]));
    return static_cast<float>(exact) * scales[j] * row_scale;
  };
  if (bias != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] = std::min(std::max(value(j) + bias[j], lo), hi);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = std::min(std::max(value(j), lo), hi);
  }
}

void linear_8bit(KernelContext& ctx, const ops::QDynLinearArgs& a) {
  const int64_t m = a.m, n = a.n, k = a.k;
  // Tasks of 32 rows (two panels of packed rows) by up to 128 outputs
  // (fewer where threads would idle: column_block); the quantized rows
  // packed once, before the tasks, or broadcast against kept weight
  // panels (quant_panels.h: qlinear_form).
  constexpr int64_t kRows = 32, kCols = 128;
  const QLinearForm form = qlinear_form(m, n, k);
  const bool packed = form == QLinearForm::PackedRows;
  const size_t q_bytes = aligned(static_cast<size_t>(m * k));
  const size_t p_bytes = aligned(static_cast<size_t>(m) * sizeof(RowQuant));
  const size_t panels_bytes = packed ? aligned(qgemm_rows_bytes(m, k)) : 0;
  const size_t acc_bytes = aligned(kRows * kCols * sizeof(int32_t));
  const int threads = std::max(1, ctx.num_threads);
  const int64_t row_blocks = (m + kRows - 1) / kRows;
  const bool weight_panels = form == QLinearForm::KeptPanels;
  int64_t col_block = column_block(row_blocks, n, threads, kCols, m * n * k / 16);
  if (weight_panels) col_block = (col_block + 15) / 16 * 16;
  const int64_t col_blocks = (n + col_block - 1) / col_block;
  auto* scratch =
      static_cast<char*>(ctx.scratch(q_bytes + p_bytes + panels_bytes + acc_bytes * threads));
  auto* q = reinterpret_cast<uint8_t*>(scratch);
  auto* params = reinterpret_cast<RowQuant*>(scratch + q_bytes);
  auto* panels = reinterpret_cast<uint8_t*>(scratch + q_bytes + p_bytes);
  // The rows as q + 128: the products' unsigned operand as it is, so no
  // row owes a sum of its bytes.
  qdyn::quantize_rows(ctx, a, q, k, qdyn::RowBytes::Shifted, params);
  if (packed) {
    const int64_t count = (m + 15) / 16;
    parallel_for(ctx, count, 16 * k, [&](int64_t begin, int64_t end) {
      qgemm_pack(reinterpret_cast<const int8_t*>(q), k, m, k, false, begin, end, panels);
    });
  }
  const int64_t panel_bytes = qgemm_panel_bytes(k);
  const int8_t* w = a.weight.data_as<const int8_t>();
  const uint8_t* w_panels =
      weight_panels ? kept_weight_panels(w, a.weight.constant_id(), n, k, true) : nullptr;
  const int32_t* sums = a.weight_sums.data_as<const int32_t>();
  const float* scales = a.weight_scales.data_as<const float>();
  const float* bias = a.bias != nullptr ? a.bias->data_as<const float>() : nullptr;
  float* out = a.out.data_as<float>();
  parallel_for(ctx, row_blocks * col_blocks, kRows * col_block * k / 16,
               [&](int64_t begin, int64_t end) {
                 auto* acc = reinterpret_cast<int32_t*>(scratch + q_bytes + p_bytes + panels_bytes +
                                                        acc_bytes * parallel_thread_index());
                 for (int64_t t = begin; t < end; ++t) {
                   const int64_t i0 = t / col_blocks * kRows, j0 = t % col_blocks * col_block;
                   const int64_t rows = std::min(kRows, m - i0), cols = std::min(col_block, n - j0);
                   // Raw sums of (q + 128) * w (zero point 0); the activation's
                   // zero point and the 128 are taken back per row below.
                   const QGemm g{q + i0 * k, k, true, 0, w + j0 * k, k, sums + j0, rows, cols, k};
                   if (packed) {
                     qgemm_rows_on_panels(g, panels + i0 / 16 * panel_bytes, acc, cols);
                   } else if (weight_panels) {
                     qgemm_packed(g, w_panels + j0 / 16 * panel_bytes, acc, cols);
                   } else {
                     qgemm(g, acc, cols);
                   }
                   for (int64_t r = 0; r < rows; ++r) {
                     finish_8bit_run(acc + r * cols, sums + j0, scales + j0,
                                     bias != nullptr ? bias + j0 : nullptr, params[i0 + r],
                                     a.out_min, a.out_max, cols, out + (i0 + r) * n + j0);
                   }
                 }
               });
}

}  // namespace

void dynamic_linear(KernelContext& ctx, const ops::QDynLinearArgs& a) {
  if (a.bits == 8) {
    linear_8bit(ctx, a);
  } else {
    qdyn::linear_4bit(ctx, a);
  }
}

}  // namespace pterun::cpu
