// The quantized linear, 2-D convolution and mean on the CPU (ops/quant.h):
// integer accumulation (quant_gemm.cpp for the products), then one
// requantization per output in float32 as ExecuTorch rounds.

#include <algorithm>
#include <cstring>
#include <vector>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_util.h"
#include "pterun/core/error.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/quant_checks.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

/// Per output channel: the multiplier input_scale * weight_scale and the
/// bias, as float32.
struct ChannelTerms {
  float* mult;
  float* bias;
};

ChannelTerms channel_terms(const ops::Requantize& rq, int64_t n, void* memory) {
  ChannelTerms t{static_cast<float*>(memory), static_cast<float*>(memory) + n};
  const Tensor& s = rq.weight_scales;
  ops::check_scales(s.data(), s.dtype(), s.numel(), "quantized weight");
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = s.numel() == 1 ? 0 : j;
    const float ws = s.dtype() == DType::Float64 ? static_cast<float>(s.data_as<const double>()[at])
                                                 : s.data_as<const float>()[at];
    t.mult[j] = rq.in_q.scale * ws;
    t.bias[j] = rq.bias != nullptr ? rq.bias->data_as<const float>()[j] : 0.0f;
  }
  return t;
}

/// Requantizes `rows` x `n` accumulators (row stride ldc) and stores
/// output (r, j) at out + out_offset(r) + j * channel_stride.
template <typename Out, typename Offset>
void store_rows(const int32_t* acc, int64_t ldc, int64_t rows, int64_t n, int64_t channel0,
                const ChannelTerms& t, const ops::Requantize& rq, Out* out, Offset&& out_offset,
                int64_t channel_stride) {
  const float inv = 1.0f / rq.out_q.scale;
  const auto zp = static_cast<float>(rq.out_q.zero_point);
  for (int64_t r = 0; r < rows; ++r) {
    Out* o = out + out_offset(r);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t ch = channel0 + j;
      const float y = static_cast<float>(acc[r * ldc + j]) * t.mult[ch] + t.bias[ch];
      o[j * channel_stride] = static_cast<Out>(requantize(y, inv, zp, rq.out_min, rq.out_max));
    }
  }
}

template <typename F>
void visit_q8(DType d, F&& f) {
  if (d == DType::UInt8) {
    f.template operator()<uint8_t>();
  } else {
    f.template operator()<int8_t>();
  }
}

// ---- linear -------------------------------------------------------------------

constexpr int64_t kRowBlock = 64;

}  // namespace

void quantized_linear(KernelContext& ctx, const ops::QLinearArgs& a) {
  const int64_t n = a.n;
  const int64_t blocks = (a.m + kRowBlock - 1) / kRowBlock;
  const int threads = std::max(1, ctx.num_threads);
  // Scratch: the channel terms, then one accumulator block per thread.
  const size_t terms_bytes = static_cast<size_t>(2 * n) * sizeof(float);
  const size_t acc_bytes = static_cast<size_t>(kRowBlock * n) * sizeof(int32_t);
  auto* scratch = static_cast<char*>(ctx.scratch(terms_bytes + acc_bytes * threads + 64));
  const ChannelTerms terms = channel_terms(a.rq, n, scratch);
  char* acc_base = scratch + (terms_bytes + 63) / 64 * 64;
  visit_q8(a.out.dtype(), [&]<typename Out>() {
    Out* out = a.out.data_as<Out>();
    parallel_for(
        ctx, blocks, std::max<int64_t>(1, kRowBlock * n * a.k / 16),
        [&](int64_t begin, int64_t end) {
          auto* acc = reinterpret_cast<int32_t*>(acc_base + acc_bytes * parallel_thread_index());
          for (int64_t b = begin; b < end; ++b) {
            const int64_t i0 = b * kRowBlock;
            const int64_t rows = std::min(kRowBlock, a.m - i0);
            QGemm g{a.in.data_as<const uint8_t>() + i0 * a.k,
                    a.k,
                    a.in.dtype() == DType::UInt8,
                    a.rq.in_q.zero_point,
                    a.weight.data_as<const int8_t>(),
                    a.k,
                    a.weight_sums.data_as<const int32_t>(),
                    rows,
                    n,
                    a.k};
            qgemm(g, acc, n);
            store_rows(
                acc, n, rows, n, 0, terms, a.rq, out + i0 * n, [n](int64_t r) { return r * n; }, 1);
          }
        });
  });
}

// ---- convolution --------------------------------------------------------------

namespace {

/// The geometry of one convolution, in elements.
struct ConvGeometry {
  int64_t batch, channels, height, width;
  int64_t out_channels, out_height, out_width;
  int64_t kh, kw, groups, cg, og;  // cg / og: input / output channels per group
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t k;                  // cg * kh * kw
  bool weight_channels_last;  // weight rows are [kh][kw][cg], else [cg][kh][kw]
};

/// Builds the im2col rows of output pixels [p0, p0 + rows) of image b,
/// group g, in the weight's order along K; positions in the padding hold
/// the input's zero point.
template <typename In>
void im2col(const Tensor& in, const ConvGeometry& c, int64_t b, int64_t g, int64_t p0, int64_t rows,
            In pad, In* dst) {
  const In* x = in.data_as<const In>();
  const int64_t s0 = in.stride(0), s1 = in.stride(1), s2 = in.stride(2), s3 = in.stride(3);
  const In* base = x + b * s0 + g * c.cg * s1;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = p0 + r;
    const int64_t oh = p / c.out_width, ow = p % c.out_width;
    In* row = dst + r * c.k;
    for (int64_t i = 0; i < c.kh; ++i) {
      const int64_t ih = oh * c.sh - c.ph + i * c.dh;
      for (int64_t j = 0; j < c.kw; ++j) {
        const int64_t iw = ow * c.sw - c.pw + j * c.dw;
        const bool inside = ih >= 0 && ih < c.height && iw >= 0 && iw < c.width;
        const In* src = base + ih * s2 + iw * s3;
        if (c.weight_channels_last) {
          In* d = row + (i * c.kw + j) * c.cg;
          if (!inside) {
            std::fill(d, d + c.cg, pad);
          } else if (s1 == 1) {
            std::memcpy(d, src, static_cast<size_t>(c.cg) * sizeof(In));
          } else {
            for (int64_t ic = 0; ic < c.cg; ++ic) d[ic] = src[ic * s1];
          }
        } else {
          In* d = row + i * c.kw + j;
          const int64_t step = c.kh * c.kw;
          for (int64_t ic = 0; ic < c.cg; ++ic) d[ic * step] = inside ? src[ic * s1] : pad;
        }
      }
    }
  }
}

constexpr int64_t kPixelBlock = 32;

}  // namespace

void quantized_conv2d(KernelContext& ctx, const ops::QConv2dArgs& a) {
  ConvGeometry c{};
  c.batch = a.in.size(0);
  c.channels = a.in.size(1);
  c.height = a.in.size(2);
  c.width = a.in.size(3);
  c.out_channels = a.out.size(1);
  c.out_height = a.out.size(2);
  c.out_width = a.out.size(3);
  c.kh = a.weight.size(2);
  c.kw = a.weight.size(3);
  c.groups = a.groups;
  c.cg = c.channels / c.groups;
  c.og = c.out_channels / c.groups;
  c.sh = a.stride[0], c.sw = a.stride[1];
  c.ph = a.padding[0], c.pw = a.padding[1];
  c.dh = a.dilation[0], c.dw = a.dilation[1];
  c.k = c.cg * c.kh * c.kw;
  c.weight_channels_last = !a.weight.is_contiguous_order();

  const int64_t pixels = c.out_height * c.out_width;
  const int64_t pixel_blocks = (pixels + kPixelBlock - 1) / kPixelBlock;
  const int64_t tasks = c.batch * c.groups * pixel_blocks;
  const int threads = std::max(1, ctx.num_threads);
  const size_t terms_bytes =
      (static_cast<size_t>(2 * c.out_channels) * sizeof(float) + 63) / 64 * 64;
  const size_t cols_bytes = (static_cast<size_t>(kPixelBlock * c.k) + 63) / 64 * 64;
  const size_t acc_bytes = static_cast<size_t>(kPixelBlock * c.og) * sizeof(int32_t);
  const size_t slot = cols_bytes + (acc_bytes + 63) / 64 * 64;
  auto* scratch = static_cast<char*>(ctx.scratch(terms_bytes + slot * threads));
  const ChannelTerms terms = channel_terms(a.rq, c.out_channels, scratch);
  const bool in_unsigned = a.in.dtype() == DType::UInt8;
  const int64_t o0 = a.out.stride(0), o1 = a.out.stride(1), o2 = a.out.stride(2),
                o3 = a.out.stride(3);
  visit_q8(a.out.dtype(), [&]<typename Out>() {
    Out* out = a.out.data_as<Out>();
    parallel_for(ctx, tasks, std::max<int64_t>(1, kPixelBlock * c.og * c.k / 8),
                 [&](int64_t begin, int64_t end) {
                   char* mine = scratch + terms_bytes + slot * parallel_thread_index();
                   auto* cols = reinterpret_cast<uint8_t*>(mine);
                   auto* acc = reinterpret_cast<int32_t*>(mine + cols_bytes);
                   for (int64_t t = begin; t < end; ++t) {
                     const int64_t pb = t % pixel_blocks;
                     const int64_t g = t / pixel_blocks % c.groups;
                     const int64_t b = t / pixel_blocks / c.groups;
                     const int64_t p0 = pb * kPixelBlock;
                     const int64_t rows = std::min(kPixelBlock, pixels - p0);
                     if (in_unsigned) {
                       im2col<uint8_t>(a.in, c, b, g, p0, rows,
                                       static_cast<uint8_t>(a.rq.in_q.zero_point), cols);
                     } else {
                       im2col<int8_t>(a.in, c, b, g, p0, rows,
                                      static_cast<int8_t>(a.rq.in_q.zero_point),
                                      reinterpret_cast<int8_t*>(cols));
                     }
                     QGemm gemm{cols,
                                c.k,
                                in_unsigned,
                                a.rq.in_q.zero_point,
                                a.weight.data_as<const int8_t>() + g * c.og * c.k,
                                c.k,
                                a.weight_sums.data_as<const int32_t>() + g * c.og,
                                rows,
                                c.og,
                                c.k};
                     qgemm(gemm, acc, c.og);
                     Out* image = out + b * o0 + g * c.og * o1;
                     store_rows(
                         acc, c.og, rows, c.og, g * c.og, terms, a.rq, image,
                         [&](int64_t r) {
                           const int64_t p = p0 + r;
                           return (p / c.out_width) * o2 + (p % c.out_width) * o3;
                         },
                         o1);
                   }
                 });
  });
}

// ---- mean ---------------------------------------------------------------------

void quantized_mean(KernelContext& ctx, const ops::QMeanArgs& a) {
  const float inv = 1.0f / a.out_q.scale;
  const auto zp = static_cast<float>(a.out_q.zero_point);
  const int64_t zero_total = a.reduce * a.in_q.zero_point;
  const auto count = static_cast<float>(a.reduce);
  visit_q8(a.in.dtype(), [&]<typename In>() {
    visit_q8(a.out.dtype(), [&]<typename Out>() {
      const In* in = a.in.data_as<const In>();
      Out* out = a.out.data_as<Out>();
      parallel_for(ctx, a.outer * a.inner, a.reduce, [&](int64_t begin, int64_t end) {
        for (int64_t e = begin; e < end; ++e) {
          const int64_t o = e / a.inner, i = e % a.inner;
          const In* src = in + o * a.reduce * a.inner + i;
          int64_t sum = 0;
          for (int64_t r = 0; r < a.reduce; ++r) sum += src[r * a.inner];
          const float y = static_cast<float>(sum - zero_total) * a.in_q.scale / count;
          out[e] = static_cast<Out>(requantize(y, inv, zp, a.out_min, a.out_max));
        }
      });
    });
  });
}

}  // namespace pterun::cpu
