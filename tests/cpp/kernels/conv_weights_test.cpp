// Convolutions keep their packed weights between calls (the float one its
// reordered weights, the int8 one its panels), and so do int8 linear layers
// of few rows: weights changed in place (same address, new values) must be
// used, not the old packed copy.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/kernels/registry.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/xnnpack.h"

namespace pterun {
namespace {

// Direct 3x3 convolution, padding 1, of one [ic, h, w] image.
std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w, int64_t ic,
                             int64_t oc, int64_t h, int64_t wd) {
  std::vector<float> out(static_cast<size_t>(oc * h * wd), 0.0f);
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t xx = 0; xx < wd; ++xx) {
        double acc = 0;
        for (int64_t c = 0; c < ic; ++c) {
          for (int64_t ky = 0; ky < 3; ++ky) {
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = y + ky - 1, ix = xx + kx - 1;
              if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
              acc += double(x[(c * h + iy) * wd + ix]) * w[((o * ic + c) * 3 + ky) * 3 + kx];
            }
          }
        }
        out[(o * h + y) * wd + xx] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

TEST(ConvolutionWeights, WeightsChangedInPlaceAreUsed) {
  constexpr int64_t ic = 8, oc = 16, h = 8, wd = 8;
  const std::array<int64_t, 4> x_sizes{1, ic, h, wd}, w_sizes{oc, ic, 3, 3}, o_sizes{1, oc, h, wd};
  std::vector<float> x(ic * h * wd), w(oc * ic * 9), out(oc * h * wd);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  Tensor tx(DType::Float32, x_sizes), tw(DType::Float32, w_sizes), to(DType::Float32, o_sizes);
  tx.set_data(x.data(), x.size() * 4);
  tw.set_data(w.data(), w.size() * 4);
  to.set_data(out.data(), out.size() * 4);
  Value one = Value::from_int(1), zero = Value::from_int(0);
  Value* ones_box[2] = {&one, &one};
  Value* zeros_box[2] = {&zero, &zero};
  Value vx = Value::from_tensor(&tx), vw = Value::from_tensor(&tw), vo = Value::from_tensor(&to);
  Value none = Value::none(), stride = Value::from_int_list(ones_box),
        padding = Value::from_int_list(ones_box), dilation = Value::from_int_list(ones_box),
        transposed = Value::from_bool(false), out_pad = Value::from_int_list(zeros_box),
        groups = Value::from_int(1);
  Value* const args[11] = {&vx,         &vw,      &none,   &stride, &padding, &dilation,
                           &transposed, &out_pad, &groups, &vo,     &vo};
  const kernels::KernelFn conv =
      kernels::KernelRegistry::global().find("aten::convolution.out", Device::CPU);
  ASSERT_NE(conv, nullptr);
  kernels::KernelContext ctx;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = static_cast<float>((i * 13 + static_cast<size_t>(round) * 3) % 7) * 0.25f - 0.75f;
    }
    conv(ctx, std::span<Value* const>(args));
    const std::vector<float> expected = reference(x, w, ic, oc, h, wd);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 1e-3) << i;
  }
}

TEST(ConvolutionWeights, QuantizedWeightsChangedInPlaceAreUsed) {
  // int8, 8 -> 24 channels over a 10 x 10 image: enough pixels for the
  // packed product. Each round changes the weights in place and compares
  // the call with one on a copy of them at a new address (packed afresh).
  if (!cpu::qgemm_packs()) GTEST_SKIP() << "this build has no packed int8 kernel";
  // The front-end finds the CPU's table through the registry, which
  // registers the backends when first used.
  ASSERT_NE(kernels::KernelRegistry::global().find("pterun::quantized_conv2d.out", Device::CPU),
            nullptr);
  constexpr int64_t ic = 8, oc = 24, h = 10, wd = 10;
  const std::array<int64_t, 4> x_sizes{1, ic, h, wd}, w_sizes{oc, ic, 3, 3}, o_sizes{1, oc, h, wd};
  const std::array<int64_t, 1> c_sizes{oc};
  std::vector<int8_t> x(ic * h * wd), w(oc * ic * 9), in_place(oc * h * wd), fresh(oc * h * wd);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  std::vector<float> scales(oc);
  for (int64_t o = 0; o < oc; ++o) scales[o] = 0.002f + 0.0003f * static_cast<float>(o);
  std::vector<int32_t> sums(oc);
  Tensor tx(DType::Int8, x_sizes), ts(DType::Float32, c_sizes), tz(DType::Int32, c_sizes);
  tx.set_data(x.data(), x.size());
  ts.set_data(scales.data(), scales.size() * 4);
  tz.set_data(sums.data(), sums.size() * 4);
  const std::array<int64_t, 2> ones{1, 1};
  int threads = 1;  // rounds 0-2 on one thread, 3-5 on two (packing in parallel)
  auto run = [&](std::vector<int8_t>& weights, std::vector<int8_t>& out) {
    Tensor tw(DType::Int8, w_sizes), to(DType::Int8, o_sizes);
    tw.set_data(weights.data(), weights.size());
    to.set_data(out.data(), out.size());
    kernels::KernelContext ctx;
    ctx.num_threads = threads;
    ops::quantized_conv2d_out(ctx, tx, 0.03, -7, tw, ts, tz, nullptr, ones, ones, ones, 1, 0.08, 4,
                              -128, 127, to);
  };
  std::vector<std::vector<int8_t>> copies;
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    threads = round < 3 ? 1 : 2;
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = static_cast<int8_t>((i * 13 + static_cast<size_t>(round) * 71) % 255 - 127);
    }
    for (int64_t o = 0; o < oc; ++o) {
      sums[o] = 0;
      for (int64_t k = 0; k < ic * 9; ++k) sums[o] += w[o * ic * 9 + k];
    }
    run(w, in_place);
    copies.push_back(w);  // all kept: each copy at an address of its own
    run(copies.back(), fresh);
    ASSERT_EQ(in_place, fresh);
  }
}

TEST(ConvolutionWeights, QuantizedLinearWeightsChangedInPlaceAreUsed) {
  // 4 rows (below the row-packing threshold: the weights are packed and
  // kept), 40 -> 40 features, int8 and uint8 activations. Each round
  // changes the weights in place and compares the call with one on a copy
  // at a new address, and both with a reference in double (within one
  // quantization step: the kernel rounds in float32).
  if (!cpu::qgemm_packs()) GTEST_SKIP() << "this build has no packed int8 kernel";
  ASSERT_NE(kernels::KernelRegistry::global().find("pterun::quantized_linear.out", Device::CPU),
            nullptr);
  constexpr int64_t m = 4, k = 40, n = 40;
  const std::array<int64_t, 2> x_sizes{m, k}, w_sizes{n, k}, o_sizes{m, n};
  const std::array<int64_t, 1> c_sizes{n};
  std::vector<float> scales(n);
  for (int64_t o = 0; o < n; ++o) scales[o] = 0.004f + 0.0002f * static_cast<float>(o);
  std::vector<int32_t> sums(n);
  constexpr double kInScale = 0.05, kOutScale = 0.3;
  constexpr int64_t kOutZero = 3;
  for (const DType dtype : {DType::Int8, DType::UInt8}) {
    SCOPED_TRACE(dtype_name(dtype));
    const bool u8 = dtype == DType::UInt8;
    const int64_t in_zero = u8 ? 120 : -5;
    std::vector<uint8_t> x(m * k);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    std::vector<int8_t> w(n * k), in_place(m * n), fresh(m * n);
    Tensor tx(dtype, x_sizes), ts(DType::Float32, c_sizes), tz(DType::Int32, c_sizes);
    tx.set_data(x.data(), x.size());
    ts.set_data(scales.data(), scales.size() * 4);
    tz.set_data(sums.data(), sums.size() * 4);
    auto run = [&](std::vector<int8_t>& weights, std::vector<int8_t>& out) {
      Tensor tw(DType::Int8, w_sizes), to(DType::Int8, o_sizes);
      tw.set_data(weights.data(), weights.size());
      to.set_data(out.data(), out.size());
      kernels::KernelContext ctx;
      ctx.num_threads = 1;
      ops::quantized_linear_out(ctx, tx, kInScale, in_zero, tw, ts, tz, nullptr, kOutScale,
                                kOutZero, -128, 127, to);
    };
    std::vector<std::vector<int8_t>> copies;
    for (int round = 0; round < 4; ++round) {
      SCOPED_TRACE(round);
      for (size_t i = 0; i < w.size(); ++i) {
        w[i] = static_cast<int8_t>((i * 13 + static_cast<size_t>(round) * 71) % 255 - 127);
      }
      for (int64_t o = 0; o < n; ++o) {
        sums[o] = 0;
        for (int64_t j = 0; j < k; ++j) sums[o] += w[o * k + j];
      }
      run(w, in_place);
      copies.push_back(w);  // all kept: each copy at an address of its own
      run(copies.back(), fresh);
      ASSERT_EQ(in_place, fresh);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t o = 0; o < n; ++o) {
          int64_t acc = 0;
          for (int64_t j = 0; j < k; ++j) {
            const int64_t xv =
                u8 ? int64_t{x[i * k + j]} : int64_t{static_cast<int8_t>(x[i * k + j])};
            acc += (xv - in_zero) * w[o * k + j];
          }
          const double y = static_cast<double>(acc) * kInScale * scales[o] / kOutScale;
          const double q = std::clamp(std::nearbyint(y) + kOutZero, -128.0, 127.0);
          ASSERT_LE(std::abs(q - in_place[i * n + o]), 1.0) << "row " << i << ", output " << o;
        }
      }
    }
  }
}

TEST(ConvolutionWeights, KeptPanelsTrustOnlyTheConstantIdTheyWereFoundWith) {
  // Weights of a method's constant (Tensor::constant_id) are not compared
  // again while the id is the one their panels were packed or found with.
  // Another id (another method) or none at the same address, with other
  // bytes, must repack: each call against one on a copy at a new address.
  if (!cpu::qgemm_packs()) GTEST_SKIP() << "this build has no packed int8 kernel";
  // The registry's first use sets up the backends the front-end calls.
  ASSERT_NE(kernels::KernelRegistry::global().find("pterun::quantized_linear.out", Device::CPU),
            nullptr);
  constexpr int64_t m = 3, k = 24, n = 20;
  const std::array<int64_t, 2> x_sizes{m, k}, w_sizes{n, k}, o_sizes{m, n};
  const std::array<int64_t, 1> c_sizes{n};
  std::vector<int8_t> x(m * k);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int8_t>((i * 29 + 3) % 251 - 125);
  std::vector<float> scales(n, 0.005f);
  std::vector<int32_t> sums(n);
  Tensor tx(DType::Int8, x_sizes), ts(DType::Float32, c_sizes), tz(DType::Int32, c_sizes);
  tx.set_data(x.data(), x.size());
  ts.set_data(scales.data(), scales.size() * 4);
  tz.set_data(sums.data(), sums.size() * 4);
  auto run = [&](std::vector<int8_t>& weights, uint64_t id) {
    std::vector<int8_t> out(m * n);
    Tensor tw(DType::Int8, w_sizes), to(DType::Int8, o_sizes);
    tw.set_data(weights.data(), weights.size());
    tw.set_constant_id(id);
    to.set_data(out.data(), out.size());
    kernels::KernelContext ctx;
    ctx.num_threads = 1;
    ops::quantized_linear_out(ctx, tx, 0.05, 2, tw, ts, tz, nullptr, 0.2, -1, -128, 127, to);
    return out;
  };
  std::vector<int8_t> w(n * k);
  std::vector<std::vector<int8_t>> copies;
  // (round, id): the same address throughout.
  const std::array<std::pair<int, uint64_t>, 5> calls{
      {{0, 1001}, {0, 1001}, {1, 1002}, {2, 0}, {3, 1002}}};
  for (const auto& [round, id] : calls) {
    SCOPED_TRACE(round);
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = static_cast<int8_t>((i * 17 + static_cast<size_t>(round) * 53) % 255 - 127);
    }
    for (int64_t o = 0; o < n; ++o) {
      sums[o] = 0;
      for (int64_t j = 0; j < k; ++j) sums[o] += w[o * k + j];
    }
    const std::vector<int8_t> got = run(w, id);
    copies.push_back(w);
    ASSERT_EQ(got, run(copies.back(), 0));
  }
}

TEST(ConvolutionWeights, DynamicLinearWeightsChangedInPlaceAreUsed) {
  // XNNPACK's dynamically quantized linear (rows quantized per call, 8-bit
  // per-channel weights), 3 rows of 40 -> 24: the weights packed and kept.
  // Each round changes them in place; the call must match one on a copy at
  // a new address, and the float product within the rows' quantization.
  if (!cpu::qgemm_packs()) GTEST_SKIP() << "this build has no packed int8 kernel";
  ASSERT_NE(kernels::KernelRegistry::global().find("xnnpack::fully_connected_dq", Device::CPU),
            nullptr);
  constexpr int64_t m = 3, k = 40, n = 24;
  const std::array<int64_t, 2> x_sizes{m, k}, w_sizes{n, k}, s_sizes{n, 1}, o_sizes{m, n};
  const std::array<int64_t, 1> c_sizes{n};
  std::vector<float> x(m * k), scales(n), in_place(m * n), fresh(m * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i)) * 2.0f;
  for (int64_t o = 0; o < n; ++o) scales[o] = 0.01f + 0.001f * static_cast<float>(o);
  std::vector<int32_t> sums(n);
  std::vector<int8_t> w(n * k);
  Tensor tx(DType::Float32, x_sizes), ts(DType::Float32, s_sizes), tz(DType::Int32, c_sizes);
  tx.set_data(x.data(), x.size() * 4);
  ts.set_data(scales.data(), scales.size() * 4);
  tz.set_data(sums.data(), sums.size() * 4);
  auto run = [&](std::vector<int8_t>& weights, std::vector<float>& out) {
    Tensor tw(DType::Int8, w_sizes), to(DType::Float32, o_sizes);
    tw.set_data(weights.data(), weights.size());
    to.set_data(out.data(), out.size() * 4);
    kernels::KernelContext ctx;
    ctx.num_threads = 1;
    ops::xnn_fully_connected_dq(ctx, tx, tw, ts, tz, nullptr, 8, 1,
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::infinity(), to);
  };
  std::vector<std::vector<int8_t>> copies;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = static_cast<int8_t>((i * 29 + static_cast<size_t>(round) * 53) % 255 - 127);
    }
    for (int64_t o = 0; o < n; ++o) {
      sums[o] = 0;
      for (int64_t j = 0; j < k; ++j) sums[o] += w[o * k + j];
    }
    run(w, in_place);
    copies.push_back(w);
    run(copies.back(), fresh);
    ASSERT_EQ(in_place, fresh);
    for (int64_t i = 0; i < m; ++i) {
      // A row quantized to 8 bits over its range is off by at most half a
      // step per input: bound the product's error by that.
      float lo = 0, hi = 0;
      for (int64_t j = 0; j < k; ++j) {
        lo = std::min(lo, x[i * k + j]);
        hi = std::max(hi, x[i * k + j]);
      }
      const double step = (static_cast<double>(hi) - lo) / 255.0;
      for (int64_t o = 0; o < n; ++o) {
        double ref = 0, bound = 0;
        for (int64_t j = 0; j < k; ++j) {
          ref += static_cast<double>(x[i * k + j]) * w[o * k + j] * scales[o];
          bound += std::abs(static_cast<double>(w[o * k + j]) * scales[o]) * step;
        }
        ASSERT_NEAR(in_place[i * n + o], ref, bound + 1e-4) << "row " << i << ", output " << o;
      }
    }
  }
}

}  // namespace
}  // namespace pterun
