// What the XNNPACK lowering (xnnpack_lowering.cpp) folds away before it
// emits kernel calls: nodes that run inside the convolution before them,
// transposes to NHWC that the convolution after them reads through, and
// reshapes of a delegate's inputs that become views of the inputs' bytes.

#include <cstdint>
#include <limits>
#include <vector>

#include "pterun/delegates/xnnpack_lowering.h"

namespace pterun::delegates {
namespace {

using format::kXnnNoValue;
using format::XnnDatatype;
using format::XnnNodeDesc;
using format::XnnValueDesc;
using T = format::XnnNodeType;

}  // namespace

// Nodes that alone read a convolution's output run inside that
// convolution, as one call:
// - a HardSwish node of the same datatype after a float Conv2d or
//   DepthwiseConv2d (xnnpack::conv2d_hardswish, depthwise_conv2d_hardswish);
// - an Add node of two float32 values of one shape after a float32 Conv2d
//   without an output clamp (a residual connection, xnnpack::conv2d_add):
//   the other value added must exist when the convolution runs (written by
//   an earlier node, or an external input), and the Add's clamp becomes the
//   convolution's.
// The convolution's output is an internal value read once, by a later
// node. Fills epilogue_of_, residual_of_ and absorbed_, once per graph.
void XnnpackLowering::find_conv_epilogues() {
  const size_t nv = g_.values.size(), nn = g_.nodes.size();
  epilogue_of_.assign(nn, -1);
  residual_of_.assign(nn, -1);
  absorbed_.assign(nn, false);
  // Reads of each value, its last reader and its writer.
  std::vector<int> reads(nv, 0);
  std::vector<int64_t> reader(nv, -1), writer(nv, -1);
  for (size_t m = 0; m < nn; ++m) {
    for (int32_t in : g_.nodes[m].inputs) {
      if (in == kXnnNoValue || static_cast<size_t>(in) >= nv) continue;
      ++reads[in];
      reader[in] = static_cast<int64_t>(m);
    }
    for (int32_t o : g_.nodes[m].outputs) {
      if (o != kXnnNoValue && static_cast<size_t>(o) < nv) writer[o] = static_cast<int64_t>(m);
    }
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto unclamped = [&](const XnnNodeDesc& node) {
    return !node.output_min_max ||
           (node.output_min_max->min == -kInf && node.output_min_max->max == kInf);
  };
  for (size_t n = 0; n < nn; ++n) {
    const XnnNodeDesc& conv = g_.nodes[n];
    if (conv.type != T::Conv2d && conv.type != T::DepthwiseConv2d) continue;
    if (conv.outputs.empty() || xnnpack_static_int8(g_, n)) continue;
    const int32_t v = conv.outputs[0];
    const XnnDatatype type = g_.values[v].datatype;
    if (!is_internal(g_.values[v]) || reads[v] != 1 || reader[v] <= static_cast<int64_t>(n) ||
        (type != XnnDatatype::Fp32 && type != XnnDatatype::Fp16 && type != XnnDatatype::BF16)) {
      continue;
    }
    const auto m = static_cast<size_t>(reader[v]);
    const XnnNodeDesc& next = g_.nodes[m];
    if (next.outputs.empty() || g_.values[next.outputs[0]].datatype != type) continue;
    if (next.type == T::Hardswish && next.inputs.size() == 1) {
      epilogue_of_[n] = static_cast<int64_t>(m);
      absorbed_[m] = true;
      continue;
    }
    if (next.type != T::Add || conv.type != T::Conv2d || type != XnnDatatype::Fp32 ||
        next.inputs.size() != 2 || !unclamped(conv) ||
        (next.inputs[0] == v) == (next.inputs[1] == v)) {
      continue;
    }
    const int32_t other = next.inputs[0] == v ? next.inputs[1] : next.inputs[0];
    if (other == kXnnNoValue || static_cast<size_t>(other) >= nv) continue;
    const XnnValueDesc& r = g_.values[other];
    const bool ready = r.is_input || (is_internal(r) && writer[other] >= 0 &&
                                      writer[other] < static_cast<int64_t>(n));
    if (!ready || r.is_constant || r.datatype != type || r.dims != g_.values[v].dims) continue;
    epilogue_of_[n] = static_cast<int64_t>(m);
    residual_of_[n] = other;
    absorbed_[m] = true;
  }
  find_nchw_inputs(reads, reader);
}

// A StaticTranspose (0, 2, 3, 1) of a float value (NCHW to NHWC: the
// exporter's before a delegate's stem) whose output one float Conv2d alone
// reads, as its input, with no epilogue, runs inside that convolution: the
// convolution reads the transpose's input in NCHW order
// (xnnpack::conv2d_nchw) and the transposed value is never made. Fills
// nchw_input_of_ and marks the transposes absorbed.
void XnnpackLowering::find_nchw_inputs(const std::vector<int>& reads,
                                       const std::vector<int64_t>& reader) {
  const size_t nv = g_.values.size(), nn = g_.nodes.size();
  nchw_input_of_.assign(nn, -1);
  auto is_float = [](XnnDatatype t) {
    return t == XnnDatatype::Fp32 || t == XnnDatatype::Fp16 || t == XnnDatatype::BF16;
  };
  for (size_t t = 0; t < nn; ++t) {
    const XnnNodeDesc& node = g_.nodes[t];
    if (node.type != T::StaticTranspose || node.inputs.size() != 1 || node.outputs.size() != 1) {
      continue;
    }
    const auto& perm = std::get<format::XnnTransposeParams>(node.params).perm;
    const int32_t src = node.inputs[0], v = node.outputs[0];
    if (perm != std::vector<uint32_t>{0, 2, 3, 1} || src == kXnnNoValue ||
        static_cast<size_t>(src) >= nv || v == kXnnNoValue || static_cast<size_t>(v) >= nv ||
        !is_internal(g_.values[v]) || reads[v] != 1 || reader[v] <= static_cast<int64_t>(t) ||
        !is_float(g_.values[v].datatype) || g_.values[src].datatype != g_.values[v].datatype ||
        g_.values[src].dims.size() != 4) {
      continue;
    }
    const auto n = static_cast<size_t>(reader[v]);
    const XnnNodeDesc& conv = g_.nodes[n];
    if (conv.type != T::Conv2d || conv.inputs.empty() || conv.inputs[0] != v ||
        epilogue_of_[n] >= 0 || absorbed_[n] || xnnpack_static_int8(g_, n)) {
      continue;
    }
    nchw_input_of_[n] = src;
    absorbed_[t] = true;
  }
}

// A reshape of an external input whose bytes are planned, of static shape
// and in order has nothing to copy either: its output becomes a second
// tensor over the input's bytes, written by no instruction, which the
// method keeps over the input wherever the input is pointed
// (Method::Loader::followers), as it does the exporter's own views. So do
// reshapes of such a view. The input is not written during the call: a
// delegate's outputs never overlap its inputs (checked).
std::vector<int32_t> XnnpackLowering::input_views(const std::vector<int32_t>& mapped,
                                                  bool dynamic) const {
  const size_t nv = g_.values.size();
  std::vector<int32_t> view_of(nv, -1);
  if (dynamic) return view_of;
  const auto& values = b_.desc().values;
  auto viewable = [&](int32_t arg) {
    const format::TensorDesc& t = *values[arg].tensor;
    if (t.storage != format::TensorStorage::Planned || t.memory_id == 0) return false;
    for (size_t i = 0; i < t.dim_order.size(); ++i) {
      if (t.dim_order[i] != i) return false;
    }
    for (const format::XnnExternal& e : g_.outputs) {
      const format::TensorDesc& o = *values[mapped[e.value]].tensor;
      if (o.storage != format::TensorStorage::Unplanned && o.memory_id == t.memory_id &&
          o.memory_offset < t.memory_offset + t.nbytes &&
          t.memory_offset < o.memory_offset + o.nbytes) {
        return false;
      }
    }
    return true;
  };
  for (const XnnNodeDesc& node : g_.nodes) {
    if (node.type != T::StaticReshape || node.inputs.empty() || node.outputs.empty()) continue;
    const int32_t in = node.inputs[0], o = node.outputs[0];
    if (in == kXnnNoValue || static_cast<size_t>(in) >= nv || !is_internal(g_.values[o]) ||
        g_.values[in].datatype != g_.values[o].datatype) {
      continue;
    }
    const XnnValueDesc& x = g_.values[in];
    const int32_t src = x.is_input && !x.is_constant ? mapped[in] : view_of[in];
    if (src < 0 || values[src].tensor->dtype != dtype_of(g_.values[o].datatype) ||
        values[src].tensor->nbytes != g_.values[o].nbytes || !viewable(src)) {
      continue;
    }
    view_of[o] = src;
  }
  return view_of;
}

}  // namespace pterun::delegates
