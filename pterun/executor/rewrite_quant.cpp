// The quantize and dequantize steps around a quantized linear layer, and
// the quantize and transpose before a quantized convolution (rewrite.h,
// find_quant_io_fusions): XNNPACK's static int8 graphs convert a float32
// input to int8 just before their first fully connected layer (or
// transpose it to NHWC for their first convolution) and back just after
// the last; the layer does it itself.

#include <initializer_list>

#include "pterun/executor/chain_view.h"
#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {
namespace {

using detail::ChainView;

constexpr const char* kQuantize = "quantized_decomposed::quantize_per_tensor.out";
constexpr const char* kDequantize = "quantized_decomposed::dequantize_per_tensor.out";
constexpr double kInt8 = static_cast<double>(static_cast<int>(DType::Int8));
constexpr double kFloat32 = static_cast<double>(static_cast<int>(DType::Float32));

/// Whether values a and b hold the same number (Int or Double).
bool same_number(const format::MethodDesc& d, int32_t a, int32_t b) {
  auto number = [&](int32_t v, double& out) {
    const auto& value = d.values[v];
    if (value.kind == ValueKind::Double) {
      out = value.double_value;
      return true;
    }
    if (value.kind == ValueKind::Int) {
      out = static_cast<double>(value.int_value);
      return true;
    }
    return false;
  };
  double x = 0, y = 0;
  return number(a, x) && number(b, y) && x == y;
}

/// An int8 tensor value.
bool is_int8(const format::MethodDesc& d, int32_t v) {
  const auto& value = d.values[v];
  return value.kind == ValueKind::Tensor && value.tensor->dtype == DType::Int8;
}

/// Whether value v is the list of Ints `want`.
bool int_list_is(const format::MethodDesc& d, int32_t v, std::initializer_list<int64_t> want) {
  const auto& value = d.values[v];
  if (value.kind != ValueKind::IntList || value.items.size() != want.size()) return false;
  size_t i = 0;
  for (int64_t w : want) {
    const int64_t item = value.items[i++];
    if (item < 0 || static_cast<size_t>(item) >= d.values.size() ||
        d.values[item].kind != ValueKind::Int || d.values[item].int_value != w) {
      return false;
    }
  }
  return true;
}

/// Value v is written by one instruction, read by one other alone and not
/// kept: it may go.
bool only_between(const ChainView& view, int32_t v) {
  return !view.keep[v] && view.uses[v] == 2;
}

}  // namespace

std::vector<PatternFusion> find_quant_io_fusions(const format::MethodDesc& d,
                                                 const std::vector<bool>& keep,
                                                 const std::vector<std::vector<bool>>& idle) {
  std::vector<PatternFusion> found;
  detail::for_each_chain(d, keep, idle, [&](const ChainView& view) {
    const size_t c = view.c;
    const auto& instrs = view.instrs();
    for (size_t l = 0; l < instrs.size(); ++l) {
      if ((l < idle[c].size() && idle[c][l]) ||
          !view.is_kernel(l, kernels::kQuantizedLinearKernel, 13)) {
        continue;
      }
      const std::vector<int32_t>& args = instrs[l].args;
      const int32_t q_in = args[0], q_out = args[11];
      PatternFusion f;
      f.chain = c;
      f.input = q_in;
      f.out = q_out;
      // quantize_per_tensor.out(x, scale, zero_point, -128, 127, int8) -> q_in
      // just before, with the layer's input parameters.
      const size_t before = view.previous_running(l);
      if (before < instrs.size() && view.is_kernel(before, kQuantize, 8) &&
          instrs[before].args[6] == q_in && is_int8(d, q_in) && only_between(view, q_in)) {
        const std::vector<int32_t>& qa = instrs[before].args;
        const format::TensorDesc* x = view.f32(qa[0]);
        if (x != nullptr && !keep[q_in] && same_number(d, qa[1], args[1]) &&
            same_number(d, qa[2], args[2]) && view.number_is(qa[3], -128) &&
            view.number_is(qa[4], 127) && view.number_is(qa[5], kInt8)) {
          f.input = qa[0];
          f.idle.push_back(before);
          f.dropped.emplace_back(q_in, before);
        }
      }
      // dequantize_per_tensor.out(q_out, scale, zero_point, -128, 127, int8,
      // None or float32) -> y just after, with the layer's out parameters.
      const size_t after = view.next_running(l);
      if (after < instrs.size() && view.is_kernel(after, kDequantize, 9) &&
          instrs[after].args[0] == q_out && is_int8(d, q_out) && only_between(view, q_out)) {
        const std::vector<int32_t>& da = instrs[after].args;
        const auto& out_dtype = d.values[da[6]];
        if (view.f32(da[7]) != nullptr && same_number(d, da[1], args[7]) &&
            same_number(d, da[2], args[8]) && view.number_is(da[3], -128) &&
            view.number_is(da[4], 127) && view.number_is(da[5], kInt8) &&
            (out_dtype.kind == ValueKind::None || view.number_is(da[6], kFloat32))) {
          f.out = da[7];
          f.idle.push_back(after);
          f.dropped.emplace_back(q_out, l);
        }
      }
      if (f.idle.empty()) continue;
      std::vector<int32_t> fused = args;
      fused[0] = f.input;
      fused[11] = fused[12] = f.out;
      f.replacement = {c, l, kernels::kQuantizedLinearFloatKernel, std::move(fused)};
      found.push_back(std::move(f));
    }
    // quantize_per_tensor.out(x: float32 [N, C, H, W], s, z, -128, 127,
    // int8) -> q, xnnpack::static_transpose(q, [0, 2, 3, 1]) -> t and
    // xnnpack::quantized_conv2d(t, s, z, ...), one after the other.
    for (size_t l = 0; l < instrs.size(); ++l) {
      if ((l < idle[c].size() && idle[c][l]) ||
          !view.is_kernel(l, "xnnpack::quantized_conv2d", 17)) {
        continue;
      }
      const std::vector<int32_t>& args = instrs[l].args;
      const size_t tr = view.previous_running(l);
      if (tr >= instrs.size() || !view.is_kernel(tr, "xnnpack::static_transpose", 4)) continue;
      const std::vector<int32_t>& ta = instrs[tr].args;
      const size_t qz = view.previous_running(tr);
      if (qz >= instrs.size() || !view.is_kernel(qz, kQuantize, 8)) continue;
      const std::vector<int32_t>& qa = instrs[qz].args;
      const int32_t q = qa[6], t = ta[2];
      const format::TensorDesc* x = view.f32(qa[0]);
      if (ta[0] != q || args[0] != t || !is_int8(d, q) || !is_int8(d, t) ||
          !only_between(view, q) || !only_between(view, t) ||
          !int_list_is(d, ta[1], {0, 2, 3, 1}) || x == nullptr || x->sizes.size() != 4 ||
          x->dim_order != std::vector<uint8_t>{0, 1, 2, 3} || !same_number(d, qa[1], args[1]) ||
          !same_number(d, qa[2], args[2]) || !view.number_is(qa[3], -128) ||
          !view.number_is(qa[4], 127) || !view.number_is(qa[5], kInt8)) {
        continue;
      }
      PatternFusion f;
      f.chain = c;
      f.input = qa[0];
      f.out = args[15];
      f.idle = {qz, tr};
      f.dropped = {{q, qz}, {t, tr}};
      std::vector<int32_t> fused = args;
      fused[0] = f.input;
      f.replacement = {c, l, kernels::kQuantizedConv2dFloatKernel, std::move(fused)};
      found.push_back(std::move(f));
    }
  });
  return found;
}

}  // namespace pterun
