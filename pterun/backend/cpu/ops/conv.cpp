// The CPU's convolution (pterun/ops/conv.h: the front-end checks and
// describes the problem; conv1d/conv2d, grouped and depthwise, transposed
// with output_padding, any dim order of input, weight and out). Forward
// f32 convolutions run our own register-blocked kernels (conv_f32_nhwc.cpp
// for channels-last activations, conv_f32.cpp for the rest: no per-call
// allocation, unlike oneDNN's execute); oneDNN
// runs transposed f32 ones and f16/bf16 (see
// conv_dnnl.cpp); the direct kernel below covers f64, integers (same-dtype
// wraparound, as torch) and anything oneDNN declines. The fused activation
// of the convolution_relu / _hardtanh / _hardswish kernels is applied by
// conv_f32 in its stores, after the others by a pass over the output.

#include <algorithm>
#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/conv.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/kernels/common/dtype_util.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

/// Accumulator of our kernel: float for f16/bf16/f32, double, and for
/// integers the unsigned type of their width (wraps exactly modulo 2^bits).
template <typename S>
using AccOf = std::conditional_t<
    std::is_floating_point_v<S>, S,
    std::conditional_t<std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>, float,
                       std::conditional_t<(sizeof(S) <= 4), uint32_t, uint64_t>>>;

/// Smallest x >= 0 with x * s >= num.
int64_t ceil_div_nonneg(int64_t num, int64_t s) {
  return num <= 0 ? 0 : (num + s - 1) / s;
}

// Direct convolution, one output row (n, oc, y) per work item, columns in
// blocks: acc[x] += w * in[..., x * stride - pad + kx * dilation], a
// unit-stride loop for stride-1 convolutions of W-contiguous inputs.
template <typename S>
void conv_own(const KernelContext& ctx, const ConvProblem& p) {
  using Acc = AccOf<S>;
  constexpr int64_t kBlock = 256;
  const S* in = static_cast<const S*>(p.in);
  const S* w = static_cast<const S*>(p.weight);
  const S* bias = static_cast<const S*>(p.bias);
  S* out = static_cast<S*>(p.out);
  const int64_t icg = p.ic / p.groups, ocg = p.oc / p.groups;
  const int64_t* is = p.in_strides;
  const int64_t* ws = p.w_strides;
  const int64_t* os = p.out_strides;
  const int64_t sh = p.stride[0], sw = p.stride[1], ph = p.pad[0], pw = p.pad[1];
  const int64_t dh = p.dilation[0], dw = p.dilation[1];

  cpu::parallel_for(ctx, p.n * p.oc * p.oh, icg * p.kh * p.kw * p.ow, [&](int64_t b, int64_t e) {
    alignas(64) Acc acc[kBlock];
    for (int64_t row = b; row < e; ++row) {
      const int64_t y = row % p.oh;
      const int64_t o = (row / p.oh) % p.oc;
      const int64_t ni = row / (p.oh * p.oc);
      const int64_t g = o / ocg;
      for (int64_t x0 = 0; x0 < p.ow; x0 += kBlock) {
        const int64_t nb = std::min(kBlock, p.ow - x0);
        const Acc init = bias != nullptr ? kernels::convert<Acc>(bias[o]) : Acc(0);
        std::fill(acc, acc + nb, init);
        for (int64_t c = 0; c < icg; ++c) {
          const int64_t ci = g * icg + c;
          const S* plane = in + ni * is[0] + ci * is[1];
          for (int64_t ky = 0; ky < p.kh; ++ky) {
            int64_t iy;
            if (!p.transposed) {
              iy = y * sh - ph + ky * dh;
              if (iy < 0 || iy >= p.ih) continue;
            } else {
              const int64_t t = y + ph - ky * dh;
              if (t < 0 || t % sh != 0 || t / sh >= p.ih) continue;
              iy = t / sh;
            }
            const S* irow = plane + iy * is[2];
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              const Acc wv =
                  p.transposed
                      ? kernels::convert<Acc>(
                            w[ci * ws[0] + (o - g * ocg) * ws[1] + ky * ws[2] + kx * ws[3]])
                      : kernels::convert<Acc>(w[o * ws[0] + c * ws[1] + ky * ws[2] + kx * ws[3]]);
              if (!p.transposed) {
                // Columns x with 0 <= x * sw - pw + kx * dw < iw.
                const int64_t off = kx * dw - pw;
                const int64_t lo = std::max(x0, ceil_div_nonneg(-off, sw));
                const int64_t last = p.iw - 1 - off;
                const int64_t hi = last < 0 ? 0 : std::min(x0 + nb, last / sw + 1);
                for (int64_t x = lo; x < hi; ++x) {
                  acc[x - x0] += wv * kernels::convert<Acc>(irow[(x * sw + off) * is[3]]);
                }
              } else {
                for (int64_t x = x0; x < x0 + nb; ++x) {
                  const int64_t t = x + pw - kx * dw;
                  if (t < 0 || t % sw != 0 || t / sw >= p.iw) continue;
                  acc[x - x0] += wv * kernels::convert<Acc>(irow[(t / sw) * is[3]]);
                }
              }
            }
          }
        }
        S* orow = out + ni * os[0] + o * os[1] + y * os[2];
        for (int64_t x = 0; x < nb; ++x) orow[(x0 + x) * os[3]] = kernels::convert<S>(acc[x]);
      }
    }
  });
}

/// The fused activation of `p` (ops/conv.h) over its output, for the
/// paths that do not apply it themselves.
void activate_output(const KernelContext& ctx, const ConvProblem& p) {
  if (p.activation == ops::ConvActivation::None && p.residual == nullptr) return;
  kernels::visit(p.dtype, kernels::Family::FloatHBF16, "aten::convolution.out", [&]<typename S>() {
    using C = kernels::ComputeOf<S>;
    const C lo = static_cast<C>(p.clamp_min), hi = static_cast<C>(p.clamp_max);
    const bool hardswish = p.activation == ops::ConvActivation::Hardswish;
    const int64_t* os = p.out_strides;
    const int64_t* rs = p.residual_strides;
    S* out = static_cast<S*>(p.out);
    const S* residual = static_cast<const S*>(p.residual);
    cpu::parallel_for(ctx, p.n * p.oc, p.oh * p.ow, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        S* plane = out + i / p.oc * os[0] + i % p.oc * os[1];
        const S* res =
            residual != nullptr ? residual + i / p.oc * rs[0] + i % p.oc * rs[1] : nullptr;
        for (int64_t y = 0; y < p.oh; ++y) {
          for (int64_t x = 0; x < p.ow; ++x) {
            S& v = plane[y * os[2] + x * os[3]];
            C c = kernels::convert<C>(v);
            if (residual != nullptr) {
              // The sum rounded to S first, as add.out would.
              c = kernels::convert<C>(
                  kernels::convert<S>(c + kernels::convert<C>(res[y * rs[2] + x * rs[3]])));
            }
            if (p.activation == ops::ConvActivation::None) {
              v = kernels::convert<S>(c);
            } else if (hardswish) {
              C t = c + C(3);
              t = t < C(0) ? C(0) : t;  // NaN stays NaN
              t = t > C(6) ? C(6) : t;
              v = kernels::convert<S>(c * t / C(6));
            } else {
              C t = c < lo ? lo : c;
              t = t > hi ? hi : t;
              v = kernels::convert<S>(t);
            }
          }
        }
      }
    });
  });
}

void convolution(KernelContext& ctx, const ConvProblem& p) {
  const char* op = "aten::convolution.out";
  // Both apply the activation themselves.
  if (p.ic != 0 && (conv_f32_nhwc(ctx, p) || conv_f32(ctx, p))) return;
  if (p.ic == 0 || !conv_dnnl(ctx, p, op)) {
    kernels::visit(p.dtype, kernels::Family::RealHBF16, op,
                   [&]<typename S>() { conv_own<S>(ctx, p); });
  }
  activate_output(ctx, p);
}

}  // namespace

const ops::ConvBackend& conv_backend() {
  static constexpr ops::ConvBackend kConv{&convolution, &convolution};
  return kConv;
}

}  // namespace pterun::cpu
