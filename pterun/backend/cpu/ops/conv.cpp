// convolution.out: conv1d/conv2d, grouped and depthwise, transposed with
// output_padding, any dim order of input, weight and out. Forward stride-1
// f32 convolutions with a few output channels per group run our own
// register-blocked kernel (conv_f32.cpp: no per-call allocation, unlike
// oneDNN's execute); oneDNN runs the other f32 ones (and f16/bf16 through
// it, see conv_dnnl.cpp); the direct kernel below covers f64, integers
// (same-dtype wraparound, as torch) and anything oneDNN declines.

#include <algorithm>
#include <array>
#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/conv_problem.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"

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

// convolution.out(input, weight, bias?, stride, padding, dilation, transposed,
//                 output_padding, groups, *, out)
void convolution_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::convolution.out";
  ConvProblem p;
  if (!make_conv_problem(args, op, p)) return;
  if (p.ic != 0 && (conv_f32(ctx, p) || conv_dnnl(ctx, p, op))) return;
  kernels::visit(p.dtype, kernels::Family::RealHBF16, op,
                 [&]<typename S>() { conv_own<S>(ctx, p); });
}

}  // namespace

namespace {

/// Element i of a parameter list of 1 or `n` entries.
int64_t param(std::span<const int64_t> list, size_t i) {
  return list[list.size() == 1 ? 0 : i];
}

void check_param(const char* op, const char* name, std::span<const int64_t> list, size_t n,
                 int64_t min) {
  PTERUN_CHECK(list.size() == 1 || list.size() == n, ErrorCode::InvalidArgument, op, ": ", name,
               " must have 1 or ", n, " entries, got ", list.size());
  for (int64_t v : list) {
    PTERUN_CHECK(v >= min, ErrorCode::InvalidArgument, op, ": ", name, " entries must be >= ", min,
                 ", got ", v);
  }
}

}  // namespace

bool make_conv_problem(std::span<Value* const> args, const char* op, ConvProblem& p) {
  const Tensor& in = args[0]->to_tensor();
  const Tensor& w = args[1]->to_tensor();
  const Tensor* bias = args[2]->to_optional_tensor();
  const auto stride = args[3]->to_int_list();
  const auto padding = args[4]->to_int_list();
  const auto dilation = args[5]->to_int_list();
  const bool transposed = args[6]->to_bool();
  const auto output_padding = args[7]->to_int_list();
  const int64_t groups = args[8]->to_int();
  Tensor& out = args[9]->to_tensor();

  const DType dtype = in.dtype();
  PTERUN_CHECK(kernels::in_family(dtype, kernels::Family::RealHBF16), ErrorCode::InvalidArgument,
               op, ": dtype ", dtype_name(dtype), " is not supported");
  PTERUN_CHECK(
      w.dtype() == dtype && out.dtype() == dtype && (bias == nullptr || bias->dtype() == dtype),
      ErrorCode::InvalidArgument, op, ": input, weight, bias and out must share a dtype, got ",
      describe(in), ", ", describe(w), " and out ", describe(out));
  PTERUN_CHECK(in.dim() == 3 || in.dim() == 4, ErrorCode::InvalidArgument, op,
               ": input must be 3-D (conv1d) or 4-D (conv2d), got ", describe(in));
  PTERUN_CHECK(w.dim() == in.dim(), ErrorCode::InvalidArgument, op, ": weight ", describe(w),
               " must have the input's rank ", in.dim());
  const size_t kdim = in.dim() - 2;
  check_param(op, "stride", stride, kdim, 1);
  check_param(op, "padding", padding, kdim, 0);
  check_param(op, "dilation", dilation, kdim, 1);
  if (transposed) check_param(op, "output_padding", output_padding, kdim, 0);
  PTERUN_CHECK(groups >= 1 && w.size(0) % groups == 0, ErrorCode::InvalidArgument, op, ": groups ",
               groups, " must be positive and divide weight.size(0) = ", w.size(0));

  p.dtype = dtype;
  p.transposed = transposed;
  p.groups = groups;
  p.n = in.size(0);
  p.ic = in.size(1);
  if (!transposed) {
    PTERUN_CHECK(p.ic == groups * w.size(1), ErrorCode::InvalidArgument, op, ": input ",
                 describe(in), " needs ", groups * w.size(1), " channels for weight ", describe(w),
                 " and groups ", groups);
    p.oc = w.size(0);
  } else {
    PTERUN_CHECK(p.ic == w.size(0), ErrorCode::InvalidArgument, op, ": input ", describe(in),
                 " must have weight.size(0) = ", w.size(0), " channels");
    p.oc = groups * w.size(1);
  }
  if (bias != nullptr) {
    PTERUN_CHECK(bias->dim() == 1 && bias->size(0) == p.oc, ErrorCode::InvalidArgument, op,
                 ": bias must be [", p.oc, "], got ", describe(*bias));
  }

  // Spatial dims: a 1-D convolution is a 2-D one of height 1.
  const bool one_d = kdim == 1;
  p.ih = one_d ? 1 : in.size(2);
  p.iw = in.size(in.dim() - 1);
  p.kh = one_d ? 1 : w.size(2);
  p.kw = w.size(w.dim() - 1);
  std::array<int64_t, 4> out_sizes{p.n, p.oc, 0, 0};
  for (size_t i = 0; i < kdim; ++i) {
    const size_t d = one_d ? 1 : i;  // slot in the 2-D problem
    const int64_t s = param(stride, i), pad = param(padding, i), dil = param(dilation, i);
    const int64_t k = w.size(2 + i), size = in.size(2 + i);
    int64_t o;
    if (!transposed) {
      o = (size + 2 * pad - dil * (k - 1) - 1) / s + 1;
      PTERUN_CHECK(size + 2 * pad - dil * (k - 1) - 1 >= 0, ErrorCode::InvalidArgument, op,
                   ": the kernel (size ", k, ", dilation ", dil,
                   ") is larger than the padded input (", size + 2 * pad, ")");
    } else {
      const int64_t op_pad = param(output_padding, i);
      PTERUN_CHECK(op_pad < s || op_pad < dil, ErrorCode::InvalidArgument, op,
                   ": output_padding must be smaller than stride or dilation, got ", op_pad);
      o = (size - 1) * s - 2 * pad + dil * (k - 1) + op_pad + 1;
      p.out_pad[d] = op_pad;
      PTERUN_CHECK(o > 0, ErrorCode::InvalidArgument, op, ": output size ", o, " is not positive");
    }
    p.stride[d] = s;
    p.pad[d] = pad;
    p.dilation[d] = dil;
    out_sizes[2 + i] = o;
  }
  kernels::resize_output(out, {out_sizes.data(), in.dim()}, op);
  p.oh = one_d ? 1 : out_sizes[2];
  p.ow = out_sizes[in.dim() - 1];
  if (out.numel() == 0) return false;

  // Strides over (N, C, H, W); the unit height of a 1-D convolution sits
  // just outside W in memory.
  auto strides4 = [&](const Tensor& t, int64_t* s) {
    const size_t r = t.dim();
    s[0] = t.stride(0);
    s[1] = t.stride(1);
    s[3] = t.stride(r - 1);
    s[2] = one_d ? t.stride(r - 1) * t.size(r - 1) : t.stride(2);
  };
  strides4(in, p.in_strides);
  strides4(w, p.w_strides);
  strides4(out, p.out_strides);
  p.in = in.data();
  p.weight = w.data();
  p.bias = bias != nullptr ? bias->data() : nullptr;
  p.out = out.data();

  // No input channels (or an empty kernel): every output is its bias.
  if (in.numel() == 0 || w.numel() == 0) p.ic = 0;
  return true;
}

void register_conv_ops(kernels::KernelRegistry& r) {
  r.add("aten::convolution.out", Device::CPU, &convolution_out);
}

}  // namespace pterun::cpu
