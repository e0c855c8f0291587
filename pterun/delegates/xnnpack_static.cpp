// Static int8 XNNPACK graphs (what XNNPACKQuantizer's static flow lowers
// with XnnpackPartitioner): quantized activations (qint8, one scale and zero
// point each) between Convert nodes, with qcint8 / qint8 filters and qcint32
// / qint32 biases. Each node becomes the integer kernel the loader uses for
// PT2E chains (docs/quantization.md), so the activations stay int8 from
// the first Convert to the last.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"
#include "pterun/delegates/kernel_call.h"
#include "pterun/delegates/xnnpack_quant.h"

namespace pterun::delegates {
namespace {

using format::kXnnNoValue;
using format::XnnDatatype;
using format::XnnGraphDesc;
using format::XnnNodeDesc;
using format::XnnNodeType;
using format::XnnQuantKind;
using format::XnnValueDesc;
using T = XnnNodeType;

constexpr uint32_t kFlagKeepDims = 0x40;
constexpr double kInf = std::numeric_limits<double>::infinity();
// The most values a requantizing Clamp takes (its zeros are a constant of
// the value's size).
constexpr uint64_t kMaxRequantized = uint64_t{1} << 26;

bool is_act(const XnnValueDesc& v) {
  return v.datatype == XnnDatatype::QInt8 && v.quant.kind == XnnQuantKind::PerTensor &&
         !v.is_constant;
}

std::string name(const XnnValueDesc& v) {
  return str_cat("value ", v.id, " (", format::xnn_datatype_name(v.datatype), ")");
}

/// Empty when every listed value is a qint8 activation.
std::string acts(const XnnGraphDesc& g, std::initializer_list<int32_t> ids) {
  for (int32_t v : ids) {
    if (!is_act(g.values[v])) {
      return str_cat(name(g.values[v]),
                     " is not a qint8 activation (static int8 graphs take "
                     "qint8 activations with per-tensor parameters)");
    }
  }
  return {};
}

bool same_params(const XnnValueDesc& a, const XnnValueDesc& b) {
  return a.quant.scale == b.quant.scale && a.quant.zero_point == b.quant.zero_point;
}

/// A static filter: constant qcint8 (scales along `channel_dim`) or
/// per-tensor qint8 with zero point 0; a bias: none, or constant qcint32 /
/// qint32.
std::string filter_and_bias(const XnnGraphDesc& g, const XnnNodeDesc& node, uint32_t channel_dim,
                            uint64_t out_channels) {
  const XnnValueDesc& f = g.values[node.inputs[1]];
  const bool per_channel = f.datatype == XnnDatatype::QCInt8 && f.quant.channel_dim == channel_dim;
  const bool per_tensor = f.datatype == XnnDatatype::QInt8 && f.quant.zero_point == 0;
  if (!f.is_constant || !(per_channel || per_tensor)) {
    return str_cat("filter ", name(f), " must be a constant qcint8 with scales along dim ",
                   channel_dim, ", or qint8 with zero point 0");
  }
  if (node.inputs[2] != kXnnNoValue) {
    const XnnValueDesc& b = g.values[node.inputs[2]];
    const bool ok = b.is_constant && b.dims.size() == 1 && b.dims[0] == out_channels &&
                    (b.datatype == XnnDatatype::QCInt32 || b.datatype == XnnDatatype::QInt32);
    if (!ok) {
      return str_cat("bias ", name(b), " must be a constant qcint32 or qint32 vector of ",
                     out_channels, " values");
    }
  }
  if (node.flags != 0) return "a transposed quantized filter is not implemented";
  return {};
}

/// q = clamp(rint(v / scale + zero_point)), as XNNPACK quantizes a node's
/// output range; -inf and +inf stay the int8 bounds.
int64_t quantize_bound(double v, const XnnValueDesc& out) {
  if (std::isinf(v)) return v < 0 ? -128 : 127;
  const float q =
      static_cast<float>(v) / out.quant.scale + static_cast<float>(out.quant.zero_point);
  return std::lrint(std::fmin(std::fmax(q, -128.0f), 127.0f));
}

struct Range {
  int64_t lo = -128, hi = 127;
};

Range out_range(const XnnNodeDesc& node, const XnnValueDesc& out) {
  if (!node.output_min_max) return {};
  return {quantize_bound(node.output_min_max->min, out),
          quantize_bound(node.output_min_max->max, out)};
}

}  // namespace

bool xnnpack_static_int8(const XnnGraphDesc& g, size_t n) {
  const XnnNodeDesc& node = g.nodes[n];
  bool any = false;
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int32_t v : *ids) {
      if (v == kXnnNoValue) continue;
      const XnnValueDesc& x = g.values[v];
      if (x.datatype == XnnDatatype::QDInt8 || x.dq_datatype) return false;  // dynamic
      any = any || x.datatype == XnnDatatype::QInt8 || x.datatype == XnnDatatype::QCInt8 ||
            x.datatype == XnnDatatype::QInt32 || x.datatype == XnnDatatype::QCInt32;
    }
  }
  return any;
}

std::string xnnpack_static_node(const XnnGraphDesc& g, size_t n) {
  const XnnNodeDesc& node = g.nodes[n];
  const auto& in = node.inputs;
  const int32_t o = node.outputs[0];
  // Every qint8 value the node touches must have usable parameters.
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int32_t v : *ids) {
      if (v == kXnnNoValue || g.values[v].quant.kind != XnnQuantKind::PerTensor) continue;
      const format::XnnQuantParams& q = g.values[v].quant;
      if (!(std::isnormal(q.scale) && q.scale > 0) || q.zero_point < -128 || q.zero_point > 127) {
        return str_cat(name(g.values[v]), " has scale ", q.scale, " and zero point ", q.zero_point,
                       " (a positive normal scale and an int8 zero point are "
                       "needed)");
      }
    }
  }
  switch (node.type) {
    case T::Convert: {
      const XnnValueDesc& a = g.values[in[0]];
      const XnnValueDesc& b = g.values[o];
      const bool quantize = a.datatype == XnnDatatype::Fp32 && is_act(b);
      const bool dequantize = is_act(a) && b.datatype == XnnDatatype::Fp32;
      if (!(quantize || dequantize) || a.dq_datatype || b.dq_datatype) {
        return str_cat("converting ", format::xnn_datatype_name(a.datatype), " to ",
                       format::xnn_datatype_name(b.datatype),
                       " is not implemented (fp32 to and from qint8 is)");
      }
      return {};
    }
    case T::FullyConnected: {
      if (std::string why = acts(g, {in[0], o}); !why.empty()) return why;
      if (g.values[in[1]].dims.size() != 2) return "a fully connected filter must be 2-D";
      return filter_and_bias(g, node, 0, g.values[in[1]].dims[0]);
    }
    case T::Conv2d:
    case T::DepthwiseConv2d: {
      if (std::string why = acts(g, {in[0], o}); !why.empty()) return why;
      if (g.values[in[0]].dims.size() != 4) return "a convolution's input must be 4-D";
      // The filter's layout as the node describes it (as the float lowering
      // checks it): [OC, KH, KW, IC / groups], or [1, KH, KW, OC] depthwise.
      const auto& p = std::get<format::XnnConvParams>(node.params);
      const uint64_t goc = p.group_output_channels, gic = p.group_input_channels;
      const bool depthwise = node.type == T::DepthwiseConv2d;
      if (depthwise && (gic == 0 || goc % gic != 0)) {
        return "group_output_channels is not a multiple of group_input_channels";
      }
      const std::vector<uint64_t> want =
          depthwise
              ? std::vector<uint64_t>{1, p.kernel_height, p.kernel_width, p.groups * (goc / gic)}
              : std::vector<uint64_t>{p.groups * goc, p.kernel_height, p.kernel_width, gic};
      const auto& dims = g.values[in[1]].dims;
      if (!std::equal(want.begin(), want.end(), dims.begin(), dims.end())) {
        return "the filter's dims do not match the node's kernel size, groups and channels";
      }
      return filter_and_bias(g, node, depthwise ? 3 : 0, want[depthwise ? 3 : 0]);
    }
    case T::Add: {
      if (std::string why = acts(g, {in[0], in[1], o}); !why.empty()) return why;
      if (g.values[in[0]].dims != g.values[in[1]].dims ||
          g.values[in[0]].dims != g.values[o].dims) {
        return "a quantized Add of operands of different shapes is not implemented";
      }
      const Range r = out_range(node, g.values[o]);
      const int32_t zp = g.values[o].quant.zero_point;
      if (r.lo > zp || r.hi < zp)
        return "an output range without the zero point is not implemented";
      return {};
    }
    case T::GlobalAvgPooling2d: {
      if (std::string why = acts(g, {in[0], o}); !why.empty()) return why;
      if (g.values[in[0]].dims.size() != 4 || (node.flags & kFlagKeepDims) == 0) {
        return "a quantized global average pooling needs a 4-D input and kept dims";
      }
      return {};
    }
    case T::Clamp:
      // Parameters that differ make it a requantization (lowered as an add
      // of zeros).
      if (std::string why = acts(g, {in[0], o}); !why.empty()) return why;
      return {};
    case T::MaxPooling2d:
    case T::StaticTranspose:
    case T::StaticReshape:
    case T::Copy: {
      if (std::string why = acts(g, {in[0], o}); !why.empty()) return why;
      if (!same_params(g.values[in[0]], g.values[o])) {
        return "input and output quantization parameters differ";
      }
      return {};
    }
    default:
      return str_cat(format::xnn_node_type_name(node.type),
                     " on quantized values is not implemented (static int8 graphs run Convert, "
                     "FullyConnected, Conv2d, DepthwiseConv2d, Add, MaxPooling2d, "
                     "GlobalAvgPooling2d, Clamp, StaticTranspose, StaticReshape, Copy)");
  }
}

StaticLowering::StaticLowering(MethodBuilder& b, const XnnGraphDesc& g) : b_(b), g_(g) {}

bool StaticLowering::lowers(XnnNodeType type) {
  switch (type) {
    case T::Convert:
    case T::FullyConnected:
    case T::Conv2d:
    case T::DepthwiseConv2d:
    case T::Add:
    case T::GlobalAvgPooling2d:
    case T::MaxPooling2d:
    case T::Clamp: return true;
    default: return false;
  }
}

const StaticLowering::Filter& StaticLowering::filter(int32_t v, bool depthwise) {
  auto it = filters_.find(v);
  if (it != filters_.end()) return it->second;
  const XnnValueDesc& f = g_.values[v];
  Filter out;
  // Output channels: dim 0, or the last of a depthwise filter [1, KH, KW, OC].
  const int64_t oc = depthwise ? f.dims[3] : f.dims[0];
  const int64_t per = oc > 0 ? static_cast<int64_t>(f.numel) / oc : 0;
  std::span<const uint8_t> bytes = f.data;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> order;
  if (f.dims.size() == 2) {
    sizes = {oc, per};
    order = {0, 1};
  } else if (!depthwise) {
    // [OC, KH, KW, IC / groups] is torch's [OC, IC / groups, KH, KW]
    // channels-last: read in place.
    sizes = {oc, f.dims[3], f.dims[1], f.dims[2]};
    order = {0, 2, 3, 1};
  } else {
    // [1, KH, KW, OC] to torch's [OC, 1, KH, KW], copied.
    std::span<uint8_t> copy = b_.own(f.numel);
    for (int64_t c = 0; c < oc; ++c) {
      for (int64_t k = 0; k < per; ++k) copy[c * per + k] = f.data[k * oc + c];
    }
    bytes = copy;
    sizes = {oc, 1, f.dims[1], f.dims[2]};
    order = {0, 1, 2, 3};
  }
  out.weight = b_.add_constant(DType::Int8, std::move(sizes), bytes, std::move(order));

  // Per channel scales (or one), and each channel's weight sum.
  const bool per_channel = f.quant.kind == XnnQuantKind::PerChannel;
  const int64_t ns = per_channel ? oc : 1;
  for (int64_t c = 0; c < ns; ++c) {
    const float s = xnn_scale(f.quant, static_cast<size_t>(c));
    PTERUN_CHECK(std::isnormal(s) && s > 0, ErrorCode::InvalidProgram, "XNNPACK filter value ",
                 f.id, ": scale ", c, " is ", s,
                 " (a quantization scale must be a positive normal float)");
    out.scales.push_back(s);
  }
  std::span<uint8_t> sums = b_.own(static_cast<size_t>(oc) * 4);
  for (int64_t c = 0; c < oc; ++c) {
    int64_t sum = 0;
    for (int64_t k = 0; k < per; ++k) sum += static_cast<int8_t>(bytes[c * per + k]);
    // Exact for the depths the integer kernels take (they refuse deeper).
    const auto exact = static_cast<int32_t>(sum);
    std::memcpy(sums.data() + 4 * c, &exact, 4);
  }
  out.scale_tensor = floats(out.scales);
  out.sums = b_.add_constant(DType::Int32, {oc}, sums);
  return filters_.emplace(v, std::move(out)).first->second;
}

int32_t StaticLowering::floats(const std::vector<float>& values) {
  std::span<uint8_t> bytes = b_.own(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return b_.add_constant(DType::Float32, {static_cast<int64_t>(values.size())}, bytes);
}

int32_t StaticLowering::bias(int32_t v, const Filter& f) {
  if (v == kXnnNoValue) return b_.add_none();
  // bias = q * scale, the scale per channel (qcint32: in_scale * w_scale, as
  // the file stores it) or per tensor (qint32).
  const XnnValueDesc& bv = g_.values[v];
  const auto n = static_cast<int64_t>(bv.dims[0]);
  PTERUN_CHECK(n == static_cast<int64_t>(g_.values[v].numel) &&
                   (f.scales.size() == 1 || static_cast<int64_t>(f.scales.size()) == n),
               ErrorCode::InvalidProgram, "XNNPACK bias value ", bv.id, " has ", n, " entries for ",
               f.scales.size(), " filter scales");
  std::vector<float> out(n);
  for (int64_t c = 0; c < n; ++c) {
    int32_t q;
    std::memcpy(&q, bv.data.data() + 4 * c, 4);
    out[c] = static_cast<float>(q) * xnn_scale(bv.quant, static_cast<size_t>(c));
  }
  return floats(out);
}

format::InstructionDesc StaticLowering::add(int32_t a, const XnnValueDesc& x, int32_t b,
                                            double b_scale, int64_t b_zero_point,
                                            const XnnValueDesc& y, int64_t lo, int64_t hi,
                                            int32_t out) {
  return Call(b_, "quantized_decomposed::add.out")
      .value(a)
      .qparams(x.quant.scale, x.quant.zero_point, true)
      .value(b)
      .qparams(b_scale, b_zero_point, true)
      .qparams(y.quant.scale, y.quant.zero_point, false)
      .i(lo)
      .i(hi)
      .done(out);
}

void StaticLowering::lower(size_t n, const std::function<int32_t(int32_t)>& tensor, bool dynamic,
                           std::vector<format::InstructionDesc>& out) {
  const XnnNodeDesc& node = g_.nodes[n];
  const auto& in = node.inputs;
  const int32_t ov = node.outputs[0];
  const int32_t o = tensor(ov);
  const XnnValueDesc& x = g_.values[in[0]];
  const XnnValueDesc& y = g_.values[ov];
  const Range r = out_range(node, y);
  const auto int8 = static_cast<int64_t>(DType::Int8);
  switch (node.type) {
    case T::Convert:
      if (x.datatype == XnnDatatype::Fp32) {
        out.push_back(Call(b_, "quantized_decomposed::quantize_per_tensor.out")
                          .value(tensor(in[0]))
                          .qparams(y.quant.scale, y.quant.zero_point, true)
                          .i(int8)
                          .done(o));
      } else {
        out.push_back(Call(b_, "quantized_decomposed::dequantize_per_tensor.out")
                          .value(tensor(in[0]))
                          .qparams(x.quant.scale, x.quant.zero_point, true)
                          .i(int8)
                          .value(b_.add_none())
                          .done(o));
      }
      return;
    case T::FullyConnected:
    case T::Conv2d:
    case T::DepthwiseConv2d: {
      const bool depthwise = node.type == T::DepthwiseConv2d;
      const Filter& f = filter(in[1], depthwise);
      Call call(b_, node.type == T::FullyConnected ? "pterun::quantized_linear.out"
                                                   : "xnnpack::quantized_conv2d");
      call.value(tensor(in[0]))
          .qparams(x.quant.scale, x.quant.zero_point, false)
          .value(f.weight)
          .value(f.scale_tensor)
          .value(f.sums)
          .value(bias(in[2], f));
      if (node.type != T::FullyConnected) {
        const auto& p = std::get<format::XnnConvParams>(node.params);
        call.list({p.padding_top, p.padding_left})
            .list({p.subsampling_height, p.subsampling_width})
            .list({p.dilation_height, p.dilation_width})
            .i(depthwise ? x.dims[3] : p.groups);
      }
      out.push_back(call.qparams(y.quant.scale, y.quant.zero_point, false).i(r.lo).i(r.hi).done(o));
      return;
    }
    case T::Add: {
      const XnnValueDesc& b = g_.values[in[1]];
      out.push_back(add(tensor(in[0]), x, tensor(in[1]), b.quant.scale, b.quant.zero_point, y, r.lo,
                        r.hi, o));
      return;
    }
    case T::GlobalAvgPooling2d:
      out.push_back(Call(b_, "pterun::quantized_mean.out")
                        .value(tensor(in[0]))
                        .qparams(x.quant.scale, x.quant.zero_point, false)
                        .list({1, 2})
                        .qparams(y.quant.scale, y.quant.zero_point, false)
                        .i(r.lo)
                        .i(r.hi)
                        .done(o));
      return;
    case T::MaxPooling2d: {
      const auto& p = std::get<format::XnnPoolingParams>(node.params);
      out.push_back(Call(b_, "xnnpack::max_pooling2d")
                        .value(tensor(in[0]))
                        .list({p.padding_top, p.padding_right, p.padding_bottom, p.padding_left})
                        .list({p.pooling_height, p.pooling_width})
                        .list({p.stride_height, p.stride_width})
                        .list({std::max(p.dilation_height, 1u), std::max(p.dilation_width, 1u)})
                        .f(node.output_min_max ? static_cast<double>(r.lo) : -kInf)
                        .f(node.output_min_max ? static_cast<double>(r.hi) : kInf)
                        .done(o));
      return;
    }
    case T::Clamp: {
      if (same_params(x, y)) {
        out.push_back(Call(b_, "xnnpack::clamp")
                          .value(tensor(in[0]))
                          .f(static_cast<double>(r.lo))
                          .f(static_cast<double>(r.hi))
                          .done(o));
        return;
      }
      // Requantized and clamped: quantize(dequantize(x) + 0) into y's
      // parameters and range, the zeros a constant of x's (static) shape.
      PTERUN_CHECK(!dynamic, ErrorCode::NotImplemented, "XNNPACK node ", n,
                   " (Clamp): requantizing a value of dynamic shape is not implemented");
      PTERUN_CHECK(x.numel <= kMaxRequantized, ErrorCode::NotImplemented, "XNNPACK node ", n,
                   " (Clamp): requantizing more than ", kMaxRequantized,
                   " values is not implemented");
      PTERUN_CHECK(r.lo <= y.quant.zero_point && y.quant.zero_point <= r.hi,
                   ErrorCode::NotImplemented, "XNNPACK node ", n,
                   " (Clamp): an output range without the zero point is not implemented");
      const int32_t zeros = b_.add_constant(
          DType::Int8, std::vector<int64_t>(x.dims.begin(), x.dims.end()), b_.own(x.numel));
      out.push_back(add(tensor(in[0]), x, zeros, 1.0, 0, y, r.lo, r.hi, o));
      return;
    }
    default:
      throw_error(ErrorCode::Internal, "a static int8 node passed the support check unlowered");
  }
}

}  // namespace pterun::delegates
