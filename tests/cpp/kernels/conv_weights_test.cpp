// The oneDNN convolution keeps reordered weights between calls: weights
// changed in place (same address, new values) must be used, not the old
// packed copy.

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/kernels/registry.h"

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

}  // namespace
}  // namespace pterun
