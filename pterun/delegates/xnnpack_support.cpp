// What of an XNNPACK graph pterun runs: the float node types (fp32, fp16,
// bf16) of the schema that ExecuTorch's XNNPACK runtime implements, with the
// flags they are exported with, the dynamically quantized fully connected
// layers and the static int8 nodes of xnnpack_quant.h. Other quantized nodes
// and ScaledDotProductAttention (no runtime implements it) are refused.

#include <array>

#include "pterun/core/str_cat.h"
#include "pterun/delegates/xnnpack_lowering.h"
#include "pterun/delegates/xnnpack_quant.h"

namespace pterun::delegates {
namespace {

using format::XnnDatatype;
using format::XnnNodeType;
using T = XnnNodeType;

// XNNPACK's node flags that pterun honours (xnnpack.h).
constexpr uint32_t kFlagTransposeWeights =
    0x1;                                     // FullyConnected; BatchMatrixMultiply's TRANSPOSE_B
constexpr uint32_t kFlagAlignCorners = 0x8;  // StaticResizeBilinear2D
constexpr uint32_t kFlagKeepDims = 0x40;     // pooling

uint32_t allowed_flags(T type) {
  switch (type) {
    case T::FullyConnected:
    case T::BatchMatrixMultiply: return kFlagTransposeWeights;
    case T::StaticResizeBilinear2D: return kFlagAlignCorners;
    case T::GlobalAvgPooling2d:
    case T::AvgPooling2d:
    case T::MaxPooling2d:
    case T::ArgMaxPooling2d: return kFlagKeepDims;
    default: return 0;
  }
}

bool is_float(XnnDatatype t) {
  return t == XnnDatatype::Fp32 || t == XnnDatatype::Fp16 || t == XnnDatatype::BF16;
}

std::string hex(uint32_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v % 16]);
    v /= 16;
  } while (v != 0);
  return "0x" + s;
}

}  // namespace

std::string xnnpack_unsupported(const format::XnnGraphDesc& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const format::XnnNodeDesc& node = graph.nodes[n];
    const std::string what = str_cat("node ", n, " (", format::xnn_node_type_name(node.type), ")");
    if (node.type == T::ScaledDotProductAttention) {
      return what + ": not implemented (ExecuTorch's XNNPACK runtime has no kernel for it either)";
    }
    if ((node.flags & ~allowed_flags(node.type)) != 0) {
      return str_cat(what, ": flags ", hex(node.flags), " are not implemented");
    }
    if (node.type == T::Conv2d || node.type == T::DepthwiseConv2d ||
        node.type == T::ConvTranspose2d) {
      const auto& p = std::get<format::XnnConvParams>(node.params);
      if (p.padding_top != p.padding_bottom || p.padding_left != p.padding_right) {
        return what + ": asymmetric padding is not implemented";
      }
    }
    if (std::optional<std::string> why = xnnpack_quantized_node(graph, n)) {
      if (!why->empty()) return str_cat(what, ": ", *why);
      continue;
    }
    for (size_t side = 0; side < 2; ++side) {
      const auto& ids = side == 0 ? node.inputs : node.outputs;
      for (size_t k = 0; k < ids.size(); ++k) {
        if (ids[k] == format::kXnnNoValue) continue;
        const format::XnnValueDesc& v = graph.values[ids[k]];
        const bool index_out = node.type == T::ArgMaxPooling2d && side == 1 && k == 1;
        const bool ok = index_out ? v.datatype == XnnDatatype::Int32 : is_float(v.datatype);
        if (!ok) {
          return str_cat(what, ": datatype ", format::xnn_datatype_name(v.datatype), " of value ",
                         v.id, " is not implemented");
        }
      }
    }
  }
  return {};
}

std::span<const std::string_view> xnnpack_operator_names() {
  static constexpr std::array<std::string_view, 54> kNames = {
      "xnnpack::add",
      "xnnpack::subtract",
      "xnnpack::multiply",
      "xnnpack::divide",
      "xnnpack::minimum",
      "xnnpack::maximum",
      "xnnpack::prelu",
      "xnnpack::sigmoid",
      "xnnpack::floor",
      "xnnpack::ceiling",
      "xnnpack::square_root",
      "xnnpack::reciprocal_square_root",
      "xnnpack::abs",
      "xnnpack::negate",
      "xnnpack::square",
      "xnnpack::log",
      "xnnpack::exp",
      "xnnpack::tanh",
      "xnnpack::sin",
      "xnnpack::cos",
      "xnnpack::gelu",
      "xnnpack::hardswish",
      "xnnpack::leaky_relu",
      "xnnpack::elu",
      "xnnpack::clamp",
      "xnnpack::softmax",
      "xnnpack::fully_connected",
      "xnnpack::batch_matrix_multiply",
      "xnnpack::conv2d",
      "xnnpack::conv2d_nchw",
      "xnnpack::depthwise_conv2d",
      "xnnpack::conv2d_hardswish",
      "xnnpack::conv2d_add",
      "xnnpack::depthwise_conv2d_hardswish",
      "xnnpack::conv_transpose2d",
      "xnnpack::avg_pooling2d",
      "xnnpack::max_pooling2d",
      "xnnpack::argmax_pooling2d",
      "xnnpack::global_avg_pooling2d",
      "xnnpack::static_resize_bilinear2d",
      "xnnpack::static_transpose",
      "xnnpack::static_reshape",
      "xnnpack::static_slice",
      "xnnpack::static_constant_pad",
      "xnnpack::concatenate",
      "xnnpack::copy",
      "xnnpack::convert",
      "xnnpack::fully_connected_dq",
      "xnnpack::quantized_conv2d",
      "quantized_decomposed::quantize_per_tensor.out",
      "quantized_decomposed::dequantize_per_tensor.out",
      "quantized_decomposed::add.out",
      "pterun::quantized_linear.out",
      "pterun::quantized_mean.out",
  };
  return kNames;
}

}  // namespace pterun::delegates
