// The quantize and dequantize steps around a quantized linear layer
// (rewrite.h, find_quant_io_fusions): XNNPACK's static int8 graphs convert
// a float32 input to int8 just before their first fully connected layer
// and back just after the last; the layer does both itself.

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

/// Value v is written by instruction `writer`, read by `reader` alone and
/// not kept: it may go.
bool only_between(const ChainView& view, int32_t v) {
  return !view.keep[v] && view.uses[v] == 2;
}

}  // namespace

std::vector<PatternFusion> find_quant_io_fusions(const format::MethodDesc& d,
                                                 const std::vector<bool>& keep,
                                                 const std::vector<std::vector<bool>>& idle) {
  std::vector<PatternFusion> found;
  if (desc::straight_line(d).empty()) return found;
  const std::vector<int> uses = count_uses(d);
  for (size_t c = 0; c < d.chains.size(); ++c) {
    const ChainView view{d, c, keep, uses, idle[c]};
    const auto& instrs = view.instrs();
    // The last running instruction before l, or instrs.size().
    auto previous_running = [&](size_t l) {
      for (size_t j = l; j-- > 0;) {
        if (j >= idle[c].size() || !idle[c][j]) return j;
      }
      return instrs.size();
    };
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
      const size_t before = previous_running(l);
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
  }
  return found;
}

}  // namespace pterun
