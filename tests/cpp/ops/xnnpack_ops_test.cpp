// The xnnpack:: front-ends called directly, for what the exported fixtures
// cannot show: XNNPACK's argmax pooling indices (the exporter delegates
// max.dim only when nothing reads them), node kinds no current export emits
// (ELU, Convert, Copy, 2-input concatenation, GAP without kept dims, BMM
// with a transposed second input), the inferred reshape dim and slice sizes
// of 0, and the memory-order reading and writing of tensors in another dim
// order. Each against a reference computed here; the argmax kernel also on
// every GPU against the CPU.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "pterun/backend/device.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/kernels/registry.h"
#include "pterun/ops/xnnpack.h"
#include "tests/cpp/test_util.h"

namespace pterun::ops {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A host tensor and its bytes.
struct Host {
  std::vector<uint8_t> bytes;
  Tensor t;
  Host(DType dtype, std::vector<int64_t> sizes, std::vector<uint8_t> order = {})
      : t(dtype, sizes, order, ShapeDynamism::DynamicBound) {
    bytes.assign(t.nbytes() + 16, 0);
    t.set_data(bytes.data(), bytes.size());
  }
  template <typename T>
  T* data() {
    return t.data_as<T>();
  }
};

KernelContext cpu() {
  kernels::KernelRegistry::global();  // sets every backend's table
  return {};
}

std::vector<float> randoms(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-4, 4);  // small integers: ties happen
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(rng));
  return v;
}

// XNNPACK's argmax pooling on NHWC `in` [1, h, w, c]: windows of k at
// stride k from -pad (top, left), positions outside the input reading the
// nearest border pixel, column by column, the first strictly largest.
void argmax_reference(const std::vector<float>& in, int64_t h, int64_t w, int64_t c, int64_t kh,
                      int64_t kw, int64_t pt, int64_t pl, int64_t oh, int64_t ow,
                      std::vector<float>& values, std::vector<int64_t>& index) {
  values.assign(oh * ow * c, 0);
  index.assign(oh * ow * c, 0);
  for (int64_t oy = 0; oy < oh; ++oy) {
    for (int64_t ox = 0; ox < ow; ++ox) {
      for (int64_t ch = 0; ch < c; ++ch) {
        float best = 0;
        int64_t at = 0;
        for (int64_t px = 0; px < kw; ++px) {
          for (int64_t py = 0; py < kh; ++py) {
            const int64_t y = std::clamp<int64_t>(oy * kh - pt + py, 0, h - 1);
            const int64_t x = std::clamp<int64_t>(ox * kw - pl + px, 0, w - 1);
            const float v = in[(y * w + x) * c + ch];
            const int64_t k = px * kh + py;
            if (k == 0 || v > best) {
              best = v;
              at = k;
            }
          }
        }
        values[(oy * ow + ox) * c + ch] = best;
        index[(oy * ow + ox) * c + ch] = at;
      }
    }
  }
}

struct ArgmaxCase {
  int64_t h, w, c, kh, kw;
  std::vector<int64_t> padding;  // top, right, bottom, left
};

const ArgmaxCase kArgmaxCases[] = {
    {3, 4, 2, 3, 2, {0, 0, 0, 0}},  // the whole height, two columns at a time
    {5, 6, 3, 2, 2, {1, 0, 0, 1}},  // padding: border pixels stand in
    {4, 7, 1, 1, 7, {0, 0, 0, 0}},  // max over W, as max.dim(3) exports
};

TEST(XnnpackOps, ArgmaxPoolingIndicesAreWithinTheWindow) {
  KernelContext ctx = cpu();
  for (const ArgmaxCase& tc : kArgmaxCases) {
    for (DType index_type : {DType::Int32, DType::Int64}) {
      SCOPED_TRACE(tc.kh * 100 + tc.kw);
      Host in(DType::Float32, {1, tc.h, tc.w, tc.c});
      const auto x = randoms(in.t.numel(), static_cast<unsigned>(tc.h * tc.w));
      std::copy(x.begin(), x.end(), in.data<float>());
      const int64_t oh = (tc.h + tc.padding[0] + tc.padding[2]) / tc.kh;
      const int64_t ow = (tc.w + tc.padding[1] + tc.padding[3]) / tc.kw;
      Host out(DType::Float32, {1, oh, ow, tc.c});
      Host idx(index_type, {1, oh, ow, tc.c});
      const std::vector<int64_t> pooling = {tc.kh, tc.kw};
      xnn_argmax_pooling2d(ctx, in.t, tc.padding, pooling, out.t, idx.t);
      std::vector<float> values;
      std::vector<int64_t> index;
      argmax_reference(x, tc.h, tc.w, tc.c, tc.kh, tc.kw, tc.padding[0], tc.padding[3], oh, ow,
                       values, index);
      for (size_t k = 0; k < values.size(); ++k) {
        EXPECT_EQ(out.data<float>()[k], values[k]) << k;
        const int64_t got =
            index_type == DType::Int32 ? idx.data<int32_t>()[k] : idx.data<int64_t>()[k];
        EXPECT_EQ(got, index[k]) << k;
      }
    }
  }
}

TEST(XnnpackOpsCuda, ArgmaxPoolingMatchesTheCpu) {
  if (backend::cuda_device_count() == 0) {
    GTEST_SKIP() << "no GPU: " << backend::cuda_unavailable_reason();
  }
  KernelContext host = cpu();
  KernelContext gpu;
  gpu.device = Device::CUDA;
  gpu.backend = backend::make_cuda_method_state(0);
  for (const ArgmaxCase& tc : kArgmaxCases) {
    Host in(DType::Float32, {1, tc.h, tc.w, tc.c});
    const auto x = randoms(in.t.numel(), 7);
    std::copy(x.begin(), x.end(), in.data<float>());
    const int64_t oh = (tc.h + tc.padding[0] + tc.padding[2]) / tc.kh;
    const int64_t ow = (tc.w + tc.padding[1] + tc.padding[3]) / tc.kw;
    const std::vector<int64_t> pooling = {tc.kh, tc.kw};
    Host out(DType::Float32, {1, oh, ow, tc.c}), idx(DType::Int64, {1, oh, ow, tc.c});
    xnn_argmax_pooling2d(host, in.t, tc.padding, pooling, out.t, idx.t);

    backend::DeviceBuffer d_in(0, in.t.nbytes()), d_out(0, out.t.nbytes()),
        d_idx(0, idx.t.nbytes());
    backend::upload(0, d_in.data(), in.t.data(), in.t.nbytes());
    Tensor g_in = in.t, g_out = out.t, g_idx = idx.t;
    g_in.set_data(d_in.data(), in.t.nbytes());
    g_out.set_data(d_out.data(), out.t.nbytes());
    g_idx.set_data(d_idx.data(), idx.t.nbytes());
    xnn_argmax_pooling2d(gpu, g_in, tc.padding, pooling, g_out, g_idx);
    backend::synchronize(gpu);
    std::vector<float> values(out.t.numel());
    std::vector<int64_t> index(idx.t.numel());
    backend::download(0, values.data(), d_out.data(), out.t.nbytes());
    backend::download(0, index.data(), d_idx.data(), idx.t.nbytes());
    for (size_t k = 0; k < values.size(); ++k) {
      EXPECT_EQ(values[k], out.data<float>()[k]) << k;
      EXPECT_EQ(index[k], idx.data<int64_t>()[k]) << k;
    }
  }
}

TEST(XnnpackOps, EluConvertCopyAndClamp) {
  KernelContext ctx = cpu();
  Host in(DType::Float32, {2, 3});
  const std::vector<float> x = {-2.0f, -0.5f, 0.0f, 0.25f, 1.5f, 3.0f};
  std::copy(x.begin(), x.end(), in.data<float>());
  Host out(DType::Float32, {2, 3});
  xnn_elu(ctx, in.t, 0.7, out.t);
  for (size_t k = 0; k < x.size(); ++k) {
    const double want = x[k] > 0 ? x[k] : 0.7 * std::expm1(x[k]);
    EXPECT_NEAR(out.data<float>()[k], want, 1e-6) << k;
  }
  Host half(DType::Float16, {2, 3}), bf(DType::BFloat16, {2, 3}), back(DType::Float32, {2, 3});
  xnn_convert(ctx, in.t, half.t);
  xnn_convert(ctx, half.t, bf.t);
  xnn_convert(ctx, bf.t, back.t);
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(static_cast<float>(half.data<Half>()[k]), x[k]);  // exact in both
    EXPECT_EQ(back.data<float>()[k], x[k]);
  }
  Host copy(DType::Float32, {2, 3});
  xnn_copy(ctx, in.t, copy.t);
  EXPECT_EQ(std::vector<float>(copy.data<float>(), copy.data<float>() + 6), x);
  Host clamped(DType::Float32, {2, 3});
  xnn_clamp(ctx, in.t, -0.5, kInf, clamped.t);
  EXPECT_EQ(std::vector<float>(clamped.data<float>(), clamped.data<float>() + 6),
            (std::vector<float>{-0.5f, -0.5f, 0.0f, 0.25f, 1.5f, 3.0f}));
}

TEST(XnnpackOps, ShapesOfReshapeSliceConcatGapAndBmm) {
  KernelContext ctx = cpu();
  Host in(DType::Float32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) in.data<float>()[i] = static_cast<float>(i);
  // A 0 in new_shape is inferred.
  Host reshaped(DType::Float32, {4, 6});
  const std::vector<int64_t> new_shape = {4, 0};
  xnn_static_reshape(ctx, in.t, new_shape, reshaped.t);
  EXPECT_EQ(reshaped.t.size(1), 6);
  EXPECT_EQ(reshaped.data<float>()[23], 23.0f);
  // A size of 0 runs to the end of its dim.
  Host sliced(DType::Float32, {1, 2, 4});
  const std::vector<int64_t> offsets = {1, 1, 0}, sizes = {1, 0, 0};
  xnn_static_slice(ctx, in.t, offsets, sizes, sliced.t);
  EXPECT_EQ(std::vector<int64_t>(sliced.t.sizes().begin(), sliced.t.sizes().end()),
            (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(sliced.data<float>()[0], 16.0f);
  EXPECT_EQ(sliced.data<float>()[7], 23.0f);
  // Two inputs along axis 0.
  Host cat(DType::Float32, {4, 3, 4});
  Tensor* parts[2] = {&in.t, &in.t};
  xnn_concatenate(ctx, parts, 0, cat.t);
  EXPECT_EQ(cat.data<float>()[24 + 5], 5.0f);
  // Global average pooling of NHWC [2, 3, 4, 1] without kept dims: [2, 1].
  Host nhwc(DType::Float32, {2, 3, 4, 1});
  std::copy(in.data<float>(), in.data<float>() + 24, nhwc.data<float>());
  Host gap(DType::Float32, {2, 1});
  xnn_global_avg_pooling2d(ctx, nhwc.t, false, -kInf, kInf, gap.t);
  EXPECT_FLOAT_EQ(gap.data<float>()[0], 5.5f);
  EXPECT_FLOAT_EQ(gap.data<float>()[1], 17.5f);
  // [2, 3, 4] x [5, 4] transposed (broadcast over the batch): [2, 3, 5].
  Host b(DType::Float32, {5, 4});
  for (int i = 0; i < 20; ++i) b.data<float>()[i] = static_cast<float>(i % 3);
  Host c(DType::Float32, {2, 3, 5});
  xnn_batch_matrix_multiply(ctx, in.t, b.t, true, c.t);
  for (int batch = 0; batch < 2; ++batch) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 5; ++j) {
        float want = 0;
        for (int k = 0; k < 4; ++k) {
          want += in.data<float>()[batch * 12 + i * 4 + k] * b.data<float>()[j * 4 + k];
        }
        EXPECT_FLOAT_EQ(c.data<float>()[batch * 15 + i * 5 + j], want);
      }
    }
  }
}

// A channels-last NCHW tensor is NHWC in memory: the op reads it as the
// NHWC tensor it is, and writes a channels-last output in memory order.
TEST(XnnpackOps, TensorsAreReadAndWrittenInMemoryOrder) {
  KernelContext ctx = cpu();
  const std::vector<uint8_t> cl = {0, 2, 3, 1};
  Host nhwc(DType::Float32, {1, 3, 3, 2});         // [N, H, W, C]
  Host nchw_cl(DType::Float32, {1, 2, 3, 3}, cl);  // the same bytes, logically NCHW
  const auto x = randoms(18, 3);
  std::copy(x.begin(), x.end(), nhwc.data<float>());
  std::copy(x.begin(), x.end(), nchw_cl.data<float>());
  Host filter(DType::Float32, {4, 1, 1, 2});  // 1x1 conv, 2 -> 4 channels
  const auto w = randoms(8, 4);
  std::copy(w.begin(), w.end(), filter.data<float>());
  const std::vector<int64_t> pad = {0, 0}, one = {1, 1};
  Host a(DType::Float32, {1, 3, 3, 4});
  Host b(DType::Float32, {1, 4, 3, 3}, cl);
  xnn_conv2d(ctx, nhwc.t, filter.t, nullptr, pad, one, one, 1, -kInf, kInf, a.t);
  xnn_conv2d(ctx, nchw_cl.t, filter.t, nullptr, pad, one, one, 1, -kInf, kInf, b.t);
  EXPECT_EQ(std::vector<int64_t>(b.t.sizes().begin(), b.t.sizes().end()),
            (std::vector<int64_t>{1, 4, 3, 3}));
  for (int i = 0; i < 36; ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  for (int p = 0; p < 9; ++p) {
    for (int o = 0; o < 4; ++o) {
      const float want = x[p * 2] * w[o * 2] + x[p * 2 + 1] * w[o * 2 + 1];
      EXPECT_FLOAT_EQ(a.data<float>()[p * 4 + o], want);
    }
  }
}

// A convolution and the HardSwish node reading it, as one call: the
// convolution's result (clamped first when the node clamps) through
// x * min(max(x + 3, 0), 6) / 6, fused into the stores (float32) or as a
// pass over the output (float16), dense and depthwise.
TEST(XnnpackOps, ConvolutionThenHardswish) {
  KernelContext ctx = cpu();
  auto hardswish = [](float x) { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; };
  const std::vector<int64_t> pad = {1, 1}, one = {1, 1};
  const auto x = randoms(2 * 5 * 5 * 3, 7);
  const auto w = randoms(4 * 3 * 3 * 3, 8);
  for (DType dtype : {DType::Float32, DType::Float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto fill = [&](Host& h, const std::vector<float>& v) {
      for (size_t i = 0; i < v.size(); ++i) {
        const float f = v[i] * 3.0f;  // across hardswish's bends at -3 and 3
        if (dtype == DType::Float32) {
          h.data<float>()[i] = f;
        } else {
          h.data<uint16_t>()[i] = Half(f).bits;
        }
      }
    };
    auto value = [&](Host& h, size_t i) {
      return dtype == DType::Float32 ? h.data<float>()[i]
                                     : Half::half_bits_to_float(h.data<uint16_t>()[i]);
    };
    // float16 rounds the convolution's result and hardswish's own.
    auto tol = [&](float want) {
      return dtype == DType::Float32 ? 1e-4f + 1e-5f * std::fabs(want)
                                     : 1e-2f + 4e-3f * std::fabs(want);
    };
    Host in(dtype, {2, 5, 5, 3});
    fill(in, x);
    Host dense_w(dtype, {4, 3, 3, 3}), depth_w(dtype, {1, 3, 3, 3});
    fill(dense_w, w);
    fill(depth_w, std::vector<float>(w.begin(), w.begin() + 27));
    for (double hi : {kInf, 2.0}) {
      Host plain(dtype, {2, 5, 5, 4}), fused(dtype, {2, 5, 5, 4});
      xnn_conv2d(ctx, in.t, dense_w.t, nullptr, pad, one, one, 1, -kInf, hi, plain.t);
      xnn_conv2d_hardswish(ctx, in.t, dense_w.t, nullptr, pad, one, one, 1, -kInf, hi, fused.t);
      for (size_t i = 0; i < 200; ++i) {
        const float want = hardswish(value(plain, i));
        EXPECT_NEAR(value(fused, i), want, tol(want)) << i;
      }
      Host dplain(dtype, {2, 5, 5, 3}), dfused(dtype, {2, 5, 5, 3});
      xnn_depthwise_conv2d(ctx, in.t, depth_w.t, nullptr, pad, one, one, -kInf, hi, dplain.t);
      xnn_depthwise_conv2d_hardswish(ctx, in.t, depth_w.t, nullptr, pad, one, one, -kInf, hi,
                                     dfused.t);
      for (size_t i = 0; i < 150; ++i) {
        const float want = hardswish(value(dplain, i));
        EXPECT_NEAR(value(dfused, i), want, tol(want)) << i;
      }
    }
  }
}

TEST(XnnpackOps, WrongArgumentsAreRefused) {
  KernelContext ctx = cpu();
  Host in(DType::Float32, {1, 3, 3, 2}), filter(DType::Float32, {4, 1, 1, 3});
  Host out(DType::Float32, {1, 3, 3, 4});
  const std::vector<int64_t> pad = {0, 0}, one = {1, 1};
  EXPECT_EQ(test::error_code_of([&] {
              xnn_conv2d(ctx, in.t, filter.t, nullptr, pad, one, one, 1, -kInf, kInf, out.t);
            }),
            ErrorCode::InvalidArgument)
      << "input channels do not match the filter";
  Host ints(DType::Int32, {1, 3, 3, 2});
  EXPECT_EQ(test::error_code_of([&] { xnn_copy(ctx, ints.t, out.t); }), ErrorCode::InvalidArgument);
  // A static output cannot take another shape.
  Tensor fixed(DType::Float32, std::vector<int64_t>{2, 2});
  std::vector<float> storage(4);
  fixed.set_data(storage.data(), 16);
  EXPECT_NE(test::error_code_of([&] { xnn_copy(ctx, in.t, fixed); }), std::nullopt);
}

}  // namespace
}  // namespace pterun::ops
