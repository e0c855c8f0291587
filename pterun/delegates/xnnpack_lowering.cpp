// Lowers the calls of one XNNPACK delegate into kernel calls of the
// `xnnpack::` operators (pterun/ops/xnnpack.h gives each one's arguments).

#include "pterun/delegates/xnnpack_lowering.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/core/str_cat.h"
#include "pterun/delegates/arena.h"
#include "pterun/delegates/kernel_call.h"
#include "pterun/delegates/xnnpack_quant.h"

namespace pterun::delegates {
namespace {

using format::kXnnNoValue;
using format::XnnDatatype;
using format::XnnNodeDesc;
using format::XnnNodeType;
using format::XnnValueDesc;
using T = XnnNodeType;

constexpr uint32_t kFlagTransposeWeights = 0x1;
constexpr uint32_t kFlagAlignCorners = 0x8;
constexpr uint32_t kFlagKeepDims = 0x40;

// Rows up to which a fully connected input is a decode step's (the CPU's
// matrix-vector kernel takes up to 8).
constexpr uint64_t kDecodeRows = 8;

/// Filters (elements) small enough to keep transposed whatever the rows:
/// 64K floats, 256 KiB, cached between calls (an MLP's 4 x 32 x 64 layers
/// run 1.5x faster as a small GEMM than streamed row by row).
constexpr uint64_t kSmallFilter = uint64_t{1} << 16;

// No internal value may need more: the arena's offsets stay far from
// overflowing, and such a plan could never be allocated anyway.
constexpr uint64_t kMaxInternalBytes = uint64_t{1} << 48;

const char* unary_op(T type) {
  switch (type) {
    case T::Sigmoid: return "xnnpack::sigmoid";
    case T::Floor: return "xnnpack::floor";
    case T::Ceiling: return "xnnpack::ceiling";
    case T::SquareRoot: return "xnnpack::square_root";
    case T::ReciprocalSquareRoot: return "xnnpack::reciprocal_square_root";
    case T::Abs: return "xnnpack::abs";
    case T::Negate: return "xnnpack::negate";
    case T::Square: return "xnnpack::square";
    case T::Log: return "xnnpack::log";
    case T::Exp: return "xnnpack::exp";
    case T::Tanh: return "xnnpack::tanh";
    case T::Sin: return "xnnpack::sin";
    case T::Cos: return "xnnpack::cos";
    case T::Gelu: return "xnnpack::gelu";
    case T::Hardswish: return "xnnpack::hardswish";
    case T::Softmax: return "xnnpack::softmax";
    case T::Copy: return "xnnpack::copy";
    case T::Convert: return "xnnpack::convert";
    default: return nullptr;
  }
}

const char* binary_op(T type) {
  switch (type) {
    case T::Add: return "xnnpack::add";
    case T::Subtract: return "xnnpack::subtract";
    case T::Multiply: return "xnnpack::multiply";
    case T::Div: return "xnnpack::divide";
    case T::Minimum: return "xnnpack::minimum";
    case T::Maximum: return "xnnpack::maximum";
    default: return nullptr;
  }
}

float load_float(const uint8_t* p, DType dtype) {
  if (dtype == DType::Float32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return dtype == DType::Float16 ? Half::half_bits_to_float(bits) : BFloat16::bits_to_float(bits);
}

void store_float(uint8_t* p, DType dtype, float f) {
  if (dtype == DType::Float32) {
    std::memcpy(p, &f, 4);
    return;
  }
  const uint16_t bits = dtype == DType::Float16 ? Half(f).bits : BFloat16(f).bits;
  std::memcpy(p, &bits, 2);
}

/// Index of the root of `v` (path halving).
int32_t find_root(std::vector<int32_t>& root, int32_t v) {
  while (root[v] != v) {
    root[v] = root[root[v]];
    v = root[v];
  }
  return v;
}

/// True when StaticTranspose `node` moves only dims of size 1: its output
/// holds its input's bytes in the same order (the last NHWC -> NCHW
/// transpose before a global pooling's [N, 1, 1, C] is flattened), so the
/// lowering treats it as a reshape.
bool moves_unit_dims(const format::XnnGraphDesc& g, const format::XnnNodeDesc& node) {
  if (node.type != format::XnnNodeType::StaticTranspose || node.inputs.empty() ||
      node.outputs.empty()) {
    return false;
  }
  const auto& perm = std::get<format::XnnTransposeParams>(node.params).perm;
  const auto& in = g.values[node.inputs[0]].dims;
  const auto& out = g.values[node.outputs[0]].dims;
  if (perm.size() != in.size() || out.size() != in.size()) return false;
  std::vector<bool> seen(in.size(), false);
  int64_t last = -1;
  for (size_t i = 0; i < perm.size(); ++i) {
    const uint32_t p = perm[i];
    if (p >= in.size() || seen[p] || out[i] != in[p]) return false;
    seen[p] = true;
    if (in[p] == 1) continue;
    if (static_cast<int64_t>(p) < last) return false;
    last = p;
  }
  return true;
}

}  // namespace

DType dtype_of(XnnDatatype t) {
  switch (t) {
    case XnnDatatype::Fp16: return DType::Float16;
    case XnnDatatype::BF16: return DType::BFloat16;
    case XnnDatatype::Int32: return DType::Int32;
    case XnnDatatype::QInt8: return DType::Int8;  // a static int8 graph's activations
    default: return DType::Float32;               // xnnpack_unsupported() let only these through
  }
}

XnnpackLowering::XnnpackLowering(MethodBuilder& builder, const format::XnnGraphDesc& graph,
                                 std::string context)
    : b_(builder), g_(graph), context_(std::move(context)), static_(builder, graph) {
  find_conv_epilogues();
}

// Constant tensor of graph value `xv` in `dtype`: its own bytes when they
// are of that dtype and aligned for it, else a converted or aligned copy
// owned by the description (a bf16 fully-connected node's bias is stored
// as fp32). With `transpose`, a 2-D [R, C] value becomes [C, R].
int32_t XnnpackLowering::constant(int32_t xv, DType dtype, bool transpose) {
  auto key = std::make_tuple(xv, dtype, transpose);
  auto it = constants_.find(key);
  if (it != constants_.end()) return it->second;
  const XnnValueDesc& v = g_.values[xv];
  const DType stored = dtype_of(v.datatype);
  std::vector<int64_t> sizes(v.dims.begin(), v.dims.end());
  if (transpose) std::swap(sizes[0], sizes[1]);
  std::span<const uint8_t> bytes = v.data;
  const size_t in_size = element_size(stored), out_size = element_size(dtype);
  if (stored != dtype || transpose) {
    // Element k of the result is element src(k) of the value; between float
    // dtypes (xnnpack_unsupported() let no other reach a node).
    std::span<uint8_t> copy = b_.own(v.numel * out_size);
    const uint64_t rows = transpose ? v.dims[0] : 1, cols = transpose ? v.dims[1] : v.numel;
    for (uint64_t k = 0; k < v.numel; ++k) {
      const uint64_t src = transpose ? (k % rows) * cols + k / rows : k;
      if (stored == dtype) {
        std::memcpy(copy.data() + k * out_size, v.data.data() + src * in_size, in_size);
      } else {
        const float f = load_float(v.data.data() + src * in_size, stored);
        store_float(copy.data() + k * out_size, dtype, f);
      }
    }
    bytes = copy;
  } else if (reinterpret_cast<uintptr_t>(bytes.data()) % out_size != 0) {
    std::span<uint8_t> copy = b_.own(bytes.size());
    std::memcpy(copy.data(), bytes.data(), bytes.size());
    bytes = copy;
  }
  // No name: a method's named tensors are its attributes, these are not.
  const int32_t index = b_.add_constant(dtype, std::move(sizes), bytes);
  constants_.emplace(key, index);
  return index;
}

void XnnpackLowering::check_external(const XnnValueDesc& v, int32_t arg) const {
  const format::ValueDesc& a = b_.desc().values[arg];
  const std::string what = str_cat(context_, ": external value ", v.id, " (argument ",
                                   v.external_id, ", value ", arg, ")");
  PTERUN_CHECK(a.kind == ValueKind::Tensor, ErrorCode::InvalidProgram, what, " is a ",
               value_kind_name(a.kind), ", not a tensor");
  const DType want = dtype_of(v.datatype);
  const DType got = a.tensor->dtype;
  const bool widened = want == DType::Int32 && got == DType::Int64;  // argmax indices
  PTERUN_CHECK(got == want || widened, ErrorCode::InvalidProgram, what, " is ", dtype_name(got),
               " but the graph says ", format::xnn_datatype_name(v.datatype));
  const size_t rank = a.tensor->sizes.size();
  const bool scalar = rank == 0 && v.dims.size() == 1 && v.dims[0] == 1;
  PTERUN_CHECK(rank == v.dims.size() || scalar, ErrorCode::InvalidProgram, what, " has ", rank,
               " dims but the graph gives it ", v.dims.size());
}

uint64_t XnnpackLowering::lower_call(std::span<const int32_t> args, uint64_t arena_base,
                                     std::vector<format::InstructionDesc>& out) {
  const size_t nv = g_.values.size();
  std::vector<int32_t> mapped(nv, -1);
  bool dynamic = false;
  for (const auto* list : {&g_.inputs, &g_.outputs}) {
    for (const format::XnnExternal& e : *list) {
      const int32_t arg = args[e.external_id];
      check_external(g_.values[e.value], arg);
      mapped[e.value] = arg;
      dynamic = dynamic || b_.desc().values[arg].tensor->dynamism != ShapeDynamism::Static;
    }
  }

  const std::vector<int32_t> view_of = input_views(mapped, dynamic);

  // Internal values: live from the node writing them to the last node
  // reading them. A reshape's output shares its input's bytes (the copy is
  // then skipped): both are only read from there on.
  std::vector<int64_t> first(nv, -1), last(nv, -1);
  std::vector<int32_t> root(nv);
  std::iota(root.begin(), root.end(), 0);
  for (size_t n = 0; n < g_.nodes.size(); ++n) {
    // Its output is written by its convolution, or never made (a
    // transpose the convolution reads through).
    if (absorbed_[n]) continue;
    const XnnNodeDesc& node = g_.nodes[n];
    if (node.type == T::StaticReshape && view_of[node.outputs[0]] >= 0) continue;
    if (epilogue_of_[n] >= 0) {
      // The absorbed node's output is written here, earlier than its node,
      // and the residual it adds is read here.
      const int32_t v = g_.nodes[static_cast<size_t>(epilogue_of_[n])].outputs[0];
      if (is_internal(g_.values[v])) {
        first[v] = static_cast<int64_t>(n);
        last[v] = std::max(last[v], static_cast<int64_t>(n));
      }
      const int32_t r = residual_of_[n];
      if (r >= 0 && is_internal(g_.values[r]) && view_of[r] < 0) {
        last[r] = std::max(last[r], static_cast<int64_t>(n));
      }
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      // A convolution reading through a transpose reads its input instead.
      const int32_t v = i == 0 && nchw_input_of_[n] >= 0 ? nchw_input_of_[n] : node.inputs[i];
      if (v != kXnnNoValue && is_internal(g_.values[v]) && view_of[v] < 0 &&
          g_.values[v].datatype != XnnDatatype::QDInt8) {
        last[v] = static_cast<int64_t>(n);
      }
    }
    for (int32_t v : node.outputs) {
      // A qdint8 value is never stored: its readers quantize the float. A
      // convolution's output read by its epilogue alone is never stored.
      if (!is_internal(g_.values[v]) || g_.values[v].datatype == XnnDatatype::QDInt8 ||
          epilogue_of_[n] >= 0) {
        continue;
      }
      first[v] =
          first[v] < 0 ? static_cast<int64_t>(n) : std::min(first[v], static_cast<int64_t>(n));
      last[v] = std::max(last[v], static_cast<int64_t>(n));
    }
    if (node.type == T::StaticReshape || (!dynamic && moves_unit_dims(g_, node))) {
      const int32_t in = node.inputs[0], o = node.outputs[0];
      // (Not over a view of an input: a reshape that is no view itself,
      // which only a damaged file makes, keeps its copy.)
      if (is_internal(g_.values[in]) && is_internal(g_.values[o]) && view_of[in] < 0 &&
          g_.values[in].datatype == g_.values[o].datatype &&
          g_.values[in].datatype != XnnDatatype::QDInt8) {
        root[o] = find_root(root, in);
      }
    }
  }
  std::vector<int32_t> request_of(nv, -1);
  std::vector<ArenaRequest> requests;
  for (size_t v = 0; v < nv; ++v) {
    if (first[v] < 0) continue;
    const uint64_t bytes = g_.values[v].nbytes;
    PTERUN_CHECK(bytes <= kMaxInternalBytes, ErrorCode::InvalidProgram, context_, ": value ",
                 g_.values[v].id, " needs ", bytes, " bytes");
    const int32_t r = find_root(root, static_cast<int32_t>(v));
    if (request_of[r] < 0) {
      request_of[r] = static_cast<int32_t>(requests.size());
      requests.push_back({bytes, first[v], last[v]});
    }
    ArenaRequest& req = requests[request_of[r]];
    req.bytes = std::max(req.bytes, bytes);
    req.first = std::min(req.first, first[v]);
    req.last = std::max(req.last, last[v]);
    request_of[v] = request_of[r];
  }
  const ArenaPlan plan = plan_arena(requests);
  for (size_t v = 0; v < nv; ++v) {
    if (request_of[v] < 0 && view_of[v] < 0) continue;
    const XnnValueDesc& x = g_.values[v];
    format::TensorDesc t;
    t.dtype = dtype_of(x.datatype);
    t.sizes.assign(x.dims.begin(), x.dims.end());
    t.dim_order.resize(t.sizes.size());
    std::iota(t.dim_order.begin(), t.dim_order.end(), uint8_t{0});
    t.dynamism = dynamic ? ShapeDynamism::DynamicBound : ShapeDynamism::Static;
    t.storage = format::TensorStorage::Planned;
    if (view_of[v] >= 0) {
      const format::TensorDesc& src = *b_.desc().values[view_of[v]].tensor;
      t.memory_id = src.memory_id;
      t.memory_offset = src.memory_offset;
    } else {
      t.memory_id = 1;
      t.memory_offset = arena_base + plan.offsets[request_of[v]];
    }
    t.numel = x.numel;
    t.nbytes = x.nbytes;
    t.is_memory_planned = true;
    mapped[v] = b_.add_tensor(std::move(t));
  }

  for (size_t n = 0; n < g_.nodes.size(); ++n) {
    if (absorbed_[n]) continue;
    const XnnNodeDesc& node = g_.nodes[n];
    // A node's constant inputs in the dtype it computes in (its output's):
    // the exporter keeps weights of fp16 nodes and biases of bf16 ones in
    // fp32, which XNNPACK converts when it packs them.
    const DType compute = dtype_of(g_.values[node.outputs[0]].datatype);
    auto tensor = [&](int32_t xv) {
      if (xv == kXnnNoValue) return b_.add_none();
      const XnnValueDesc& v = g_.values[xv];
      if (v.is_constant) {
        const bool convert = node.type != T::Convert && compute != DType::Int32;
        return constant(xv, convert ? compute : dtype_of(v.datatype));
      }
      return mapped[xv];
    };
    const std::vector<int32_t>& in = node.inputs;
    const int32_t o = tensor(node.outputs[0]);
    const std::string what =
        str_cat(context_, ", node ", n, " (", format::xnn_node_type_name(node.type), ")");
    if (xnnpack_static_int8(g_, n) && StaticLowering::lowers(node.type)) {
      static_.lower(n, tensor, dynamic, out);
      continue;
    }
    if (node.type == T::Convert && g_.values[node.outputs[0]].datatype == XnnDatatype::QDInt8) {
      continue;  // its FullyConnected readers quantize its input themselves
    }
    if (node.type == T::FullyConnected &&
        g_.values[in[1]].quant.kind != format::XnnQuantKind::None) {
      const DynamicSource src = dynamic_source(g_, in[0]);
      auto it = quant_filters_.find(in[1]);
      if (it == quant_filters_.end()) {
        it = quant_filters_.emplace(in[1], quant_filter(b_, g_.values[in[1]], what)).first;
      }
      const QuantFilter& f = it->second;
      out.push_back(Call(b_, "xnnpack::fully_connected_dq")
                        .value(tensor(src.value))
                        .value(f.weight)
                        .value(f.scales)
                        .value(f.sums)
                        .value(tensor(in[2]))
                        .i(f.bits)
                        .i(src.num_nonbatch_dims)
                        .range(node)
                        .done(o));
      continue;
    }
    if (const char* op = binary_op(node.type)) {
      out.push_back(Call(b_, op).value(tensor(in[0])).value(tensor(in[1])).range(node).done(o));
      continue;
    }
    if (const char* op = unary_op(node.type)) {
      out.push_back(Call(b_, op).value(tensor(in[0])).done(o));
      continue;
    }
    switch (node.type) {
      case T::PReLU:
        out.push_back(Call(b_, "xnnpack::prelu").value(tensor(in[0])).value(tensor(in[1])).done(o));
        break;
      case T::Clamp:
        out.push_back(Call(b_, "xnnpack::clamp").value(tensor(in[0])).range(node).done(o));
        break;
      case T::LeakyReLU:
      case T::ELU: {
        const double p = std::get<format::XnnScalarParams>(node.params).value;
        const char* op = node.type == T::ELU ? "xnnpack::elu" : "xnnpack::leaky_relu";
        out.push_back(Call(b_, op).value(tensor(in[0])).f(p).done(o));
        break;
      }
      case T::FullyConnected: {
        // A constant [N, K] filter is stored transposed, [K, N], where the
        // input has more rows than a decode step or the filter is small
        // enough to stay in cache between calls: the small GEMMs read a
        // row-major right-hand side in place (as the plain export's addmm,
        // whose transposed weight constant folding computes). Large filters
        // with inputs of a few rows, or of a dynamic row count (an LLM's
        // tokens), keep [N, K], which the matrix-vector kernel streams row
        // by row.
        bool transposed = (node.flags & kFlagTransposeWeights) != 0;
        int32_t filter = tensor(in[1]);
        const XnnValueDesc& f = g_.values[in[1]];
        const XnnValueDesc& x = g_.values[in[0]];
        const uint64_t rows = x.dims.empty() || x.dims.back() == 0 ? 0 : x.numel / x.dims.back();
        const bool small = f.numel < kSmallFilter;
        if (f.is_constant && !transposed && f.dims.size() == 2 &&
            (small || (!dynamic && rows > kDecodeRows))) {
          filter = constant(in[1], compute, true);
          transposed = true;
        }
        out.push_back(Call(b_, "xnnpack::fully_connected")
                          .value(tensor(in[0]))
                          .value(filter)
                          .value(tensor(in[2]))
                          .flag(transposed)
                          .range(node)
                          .done(o));
        break;
      }
      case T::BatchMatrixMultiply:
        out.push_back(Call(b_, "xnnpack::batch_matrix_multiply")
                          .value(tensor(in[0]))
                          .value(tensor(in[1]))
                          .flag((node.flags & kFlagTransposeWeights) != 0)
                          .done(o));
        break;
      case T::Conv2d:
      case T::DepthwiseConv2d:
      case T::ConvTranspose2d: {
        const auto& p = std::get<format::XnnConvParams>(node.params);
        const XnnValueDesc& filter = g_.values[in[1]];
        const uint32_t goc = p.group_output_channels, gic = p.group_input_channels;
        // The filter's layout as the node describes it (checked here, so
        // that the kernel and XNNPACK's node agree).
        std::vector<uint64_t> want;
        if (node.type == T::DepthwiseConv2d) {
          PTERUN_CHECK(goc % gic == 0, ErrorCode::InvalidProgram, what, ": group_output_channels ",
                       goc, " is not a multiple of group_input_channels ", gic);
          want = {1, p.kernel_height, p.kernel_width, uint64_t{p.groups} * (goc / gic)};
        } else {
          want = {uint64_t{p.groups} * goc, p.kernel_height, p.kernel_width, gic};
        }
        PTERUN_CHECK(std::equal(want.begin(), want.end(), filter.dims.begin(), filter.dims.end()),
                     ErrorCode::InvalidProgram, what,
                     ": the filter's dims do not match the node's "
                     "kernel size, groups and channels");
        const int64_t epilogue = epilogue_of_[n];
        const bool residual = residual_of_[n] >= 0;
        const bool hardswish = epilogue >= 0 && !residual;
        const bool nchw = nchw_input_of_[n] >= 0;
        Call call(b_, node.type == T::Conv2d ? (hardswish  ? "xnnpack::conv2d_hardswish"
                                                : residual ? "xnnpack::conv2d_add"
                                                : nchw     ? "xnnpack::conv2d_nchw"
                                                           : "xnnpack::conv2d")
                      : node.type == T::DepthwiseConv2d
                          ? (hardswish ? "xnnpack::depthwise_conv2d_hardswish"
                                       : "xnnpack::depthwise_conv2d")
                          : "xnnpack::conv_transpose2d");
        call.value(tensor(nchw ? nchw_input_of_[n] : in[0]))
            .value(tensor(in[1]))
            .value(tensor(in[2]))
            .list({p.padding_top, p.padding_left});
        if (node.type == T::ConvTranspose2d) call.list({p.adjustment_height, p.adjustment_width});
        call.list({p.subsampling_height, p.subsampling_width})
            .list({p.dilation_height, p.dilation_width});
        if (node.type != T::DepthwiseConv2d) call.i(p.groups);
        if (epilogue < 0) {
          out.push_back(call.range(node).done(o));
          break;
        }
        const XnnNodeDesc& last_node = g_.nodes[static_cast<size_t>(epilogue)];
        if (residual) call.value(tensor(residual_of_[n]));
        // A residual's Add clamps the sum (the convolution has no clamp);
        // a HardSwish comes after the convolution's clamp.
        out.push_back(call.range(residual ? last_node : node).done(tensor(last_node.outputs[0])));
        break;
      }
      case T::AvgPooling2d:
      case T::MaxPooling2d: {
        const auto& p = std::get<format::XnnPoolingParams>(node.params);
        Call call(
            b_, node.type == T::AvgPooling2d ? "xnnpack::avg_pooling2d" : "xnnpack::max_pooling2d");
        call.value(tensor(in[0]))
            .list({p.padding_top, p.padding_right, p.padding_bottom, p.padding_left})
            .list({p.pooling_height, p.pooling_width})
            .list({p.stride_height, p.stride_width});
        // Average pooling nodes leave dilation 0 (unused); 0 means 1.
        if (node.type == T::MaxPooling2d) {
          call.list({std::max(p.dilation_height, 1u), std::max(p.dilation_width, 1u)});
        }
        out.push_back(call.range(node).done(o));
        break;
      }
      case T::ArgMaxPooling2d: {
        const auto& p = std::get<format::XnnArgMaxPoolingParams>(node.params);
        const int32_t indices = tensor(node.outputs[1]);
        const int32_t outs[2] = {o, indices};
        out.push_back(Call(b_, "xnnpack::argmax_pooling2d")
                          .value(tensor(in[0]))
                          .list({p.padding_top, p.padding_right, p.padding_bottom, p.padding_left})
                          .list({p.pooling_height, p.pooling_width})
                          .value(o)
                          .value(indices)
                          .done_list(b_.add_tensor_list(outs)));
        break;
      }
      case T::GlobalAvgPooling2d:
        out.push_back(Call(b_, "xnnpack::global_avg_pooling2d")
                          .value(tensor(in[0]))
                          .flag((node.flags & kFlagKeepDims) != 0)
                          .range(node)
                          .done(o));
        break;
      case T::StaticResizeBilinear2D: {
        const auto& p = std::get<format::XnnResizeParams>(node.params);
        out.push_back(Call(b_, "xnnpack::static_resize_bilinear2d")
                          .value(tensor(in[0]))
                          .i(p.new_height)
                          .i(p.new_width)
                          .flag((node.flags & kFlagAlignCorners) != 0)
                          .done(o));
        break;
      }
      case T::StaticTranspose:
        // One that moves only dims of size 1 is a reshape (above).
        if (!dynamic && moves_unit_dims(g_, node) && mapped[in[0]] != mapped[node.outputs[0]] &&
            request_of[in[0]] >= 0 && request_of[in[0]] == request_of[node.outputs[0]]) {
          break;
        }
        out.push_back(Call(b_, "xnnpack::static_transpose")
                          .value(tensor(in[0]))
                          .list(std::get<format::XnnTransposeParams>(node.params).perm)
                          .done(o));
        break;
      case T::StaticReshape:
        // A reshape between two internal values of static shape that share
        // their bytes, or into a view of an input, has nothing left to do
        // at run time.
        if (view_of[node.outputs[0]] >= 0 ||
            (!dynamic && mapped[in[0]] != mapped[node.outputs[0]] && request_of[in[0]] >= 0 &&
             request_of[in[0]] == request_of[node.outputs[0]])) {
          break;
        }
        out.push_back(Call(b_, "xnnpack::static_reshape")
                          .value(tensor(in[0]))
                          .list(std::get<format::XnnReshapeParams>(node.params).new_shape)
                          .done(o));
        break;
      case T::StaticSlice: {
        const auto& p = std::get<format::XnnSliceParams>(node.params);
        out.push_back(Call(b_, "xnnpack::static_slice")
                          .value(tensor(in[0]))
                          .list(p.offsets)
                          .list(p.sizes)
                          .done(o));
        break;
      }
      case T::StaticConstantPad: {
        const auto& p = std::get<format::XnnPadParams>(node.params);
        out.push_back(Call(b_, "xnnpack::static_constant_pad")
                          .value(tensor(in[0]))
                          .list(p.pre_paddings)
                          .list(p.post_paddings)
                          .f(p.padding_value)
                          .done(o));
        break;
      }
      case T::Concatenate2:
      case T::Concatenate3:
      case T::Concatenate4:
      case T::Concatenate5: {
        std::vector<int32_t> items;
        for (int32_t v : in) items.push_back(tensor(v));
        out.push_back(Call(b_, "xnnpack::concatenate")
                          .value(b_.add_tensor_list(items))
                          .i(std::get<format::XnnConcatParams>(node.params).axis)
                          .done(o));
        break;
      }
      default:
        throw_error(ErrorCode::Internal, what + ": passed the support check but has no lowering");
    }
  }
  return plan.size;
}

}  // namespace pterun::delegates
