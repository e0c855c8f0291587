// Decodes one XNNPACK node (docs/format.md, "XNNPACK payloads"): its ids
// resolved to value indices, its fields copied, and the fields that index
// into its values' dims (perm, slice offsets, paddings, concat axis,
// channel layouts) checked against those values' ranks.

#include <algorithm>

#include "pterun/core/error.h"
#include "pterun/format/xnnpack_nodes.h"

namespace pterun::format {
namespace fb = pterun_fb::xnn;
namespace {

// The table each node type is stored as (several types share one).
enum class Table {
  Unary,
  Binary,
  FullyConnected,
  Conv,
  Pooling,
  ArgMaxPooling,
  Concat,
  Transpose,
  Resize,
  Pad,
  Reshape,
  Slice,
  LeakyReLU,
  ELU,
  Attention,
};

Table table_of(XnnNodeType type) {
  using T = XnnNodeType;
  switch (type) {
    case T::Add:
    case T::Div:
    case T::Minimum:
    case T::Maximum:
    case T::Multiply:
    case T::Subtract:
    case T::PReLU:
    case T::BatchMatrixMultiply: return Table::Binary;
    case T::FullyConnected: return Table::FullyConnected;
    case T::Conv2d:
    case T::DepthwiseConv2d:
    case T::ConvTranspose2d: return Table::Conv;
    case T::AvgPooling2d:
    case T::MaxPooling2d: return Table::Pooling;
    case T::ArgMaxPooling2d: return Table::ArgMaxPooling;
    case T::Concatenate2:
    case T::Concatenate3:
    case T::Concatenate4:
    case T::Concatenate5: return Table::Concat;
    case T::StaticTranspose: return Table::Transpose;
    case T::StaticResizeBilinear2D: return Table::Resize;
    case T::StaticConstantPad: return Table::Pad;
    case T::StaticReshape: return Table::Reshape;
    case T::StaticSlice: return Table::Slice;
    case T::LeakyReLU: return Table::LeakyReLU;
    case T::ELU: return Table::ELU;
    case T::ScaledDotProductAttention: return Table::Attention;
    default: return Table::Unary;
  }
}

std::vector<uint32_t> copy_uints(const flatbuffers::Vector<uint32_t>* v) {
  return v ? std::vector<uint32_t>(v->begin(), v->end()) : std::vector<uint32_t>();
}

class NodeReader {
 public:
  NodeReader(const fb::Node& node, const std::vector<XnnValueDesc>& values,
             const std::unordered_map<uint32_t, int32_t>& index_of_id, std::string label,
             XnnNodeDesc& out)
      : node_(node),
        values_(values),
        index_of_id_(index_of_id),
        label_(std::move(label)),
        out_(out) {}

  void read() {
    switch (table_of(out_.type)) {
      case Table::Unary: {
        const auto& t = table<fb::UnaryNode>();
        in(t.input_id(), "input_id");
        out(t.output_id(), "output_id");
        out_.flags = t.flags();
        break;
      }
      case Table::Binary: {
        const auto& t = table<fb::BinaryNode>();
        in(t.input1_id(), "input1_id");
        in(t.input2_id(), "input2_id");
        out(t.output_id(), "output_id");
        out_.flags = t.flags();
        break;
      }
      case Table::FullyConnected: read_fully_connected(); break;
      case Table::Conv: read_conv(); break;
      case Table::Pooling: read_pooling(); break;
      case Table::ArgMaxPooling: read_argmax_pooling(); break;
      case Table::Concat: read_concat(); break;
      case Table::Transpose: read_transpose(); break;
      case Table::Resize: read_resize(); break;
      case Table::Pad: read_pad(); break;
      case Table::Reshape: read_reshape(); break;
      case Table::Slice: read_slice(); break;
      case Table::LeakyReLU: {
        const auto& t = table<fb::LeakyReLU>();
        in(t.input_id(), "input_id");
        out(t.output_id(), "output_id");
        out_.flags = t.flags();
        out_.params = XnnScalarParams{t.negative_slope()};
        break;
      }
      case Table::ELU: {
        const auto& t = table<fb::ELU>();
        in(t.input_id(), "input_id");
        out(t.output_id(), "output_id");
        out_.flags = t.flags();
        out_.params = XnnScalarParams{t.alpha()};
        break;
      }
      case Table::Attention: {
        const auto& t = table<fb::ScaledDotProductAttention>();
        in(t.query_id(), "query_id");
        in(t.key_id(), "key_id");
        in(t.value_id(), "value_id");
        in(t.scale_id(), "scale_id");
        optional_in(t.mask_id(), "mask_id");
        out(t.output_id(), "output_id");
        out_.flags = t.flags();
        break;
      }
    }
  }

 private:
  // The node's table as the type byte says; the verifier checked it as
  // that table.
  template <typename T>
  const T& table() const {
    const auto* t = static_cast<const T*>(node_.xnode_union());
    PTERUN_CHECK(t != nullptr, ErrorCode::InvalidProgram, label_, ": its table is missing");
    return *t;
  }

  int32_t value(uint32_t id, const char* field, bool optional) const {
    if (id == kXnnInvalidId) {
      PTERUN_CHECK(optional, ErrorCode::InvalidProgram, label_, ": ", field,
                   " is unset (XNNPACK's invalid id)");
      return kXnnNoValue;
    }
    auto it = index_of_id_.find(id);
    PTERUN_CHECK(it != index_of_id_.end(), ErrorCode::InvalidProgram, label_, ": ", field, " ", id,
                 " names no value (the graph has ", values_.size(), ")");
    return it->second;
  }
  void in(uint32_t id, const char* field) { out_.inputs.push_back(value(id, field, false)); }
  void optional_in(uint32_t id, const char* field) {
    out_.inputs.push_back(value(id, field, true));
  }
  void out(uint32_t id, const char* field) { out_.outputs.push_back(value(id, field, false)); }

  size_t rank(int32_t index) const { return values_[index].dims.size(); }

  // Value `index` (named `role` in messages) has `expected` dims.
  void expect_rank(int32_t index, size_t expected, const char* role) const {
    if (index == kXnnNoValue) return;
    PTERUN_CHECK(rank(index) == expected, ErrorCode::InvalidProgram, label_, ": ", role, " (value ",
                 index, ") has ", rank(index), " dims, expected ", expected);
  }

  void expect_positive(uint32_t v, const char* field) const {
    PTERUN_CHECK(v > 0, ErrorCode::InvalidProgram, label_, ": ", field, " is 0");
  }

  void read_fully_connected() {
    const auto& t = table<fb::FullyConnected>();
    in(t.input1_id(), "input1_id");
    in(t.filter_id(), "filter_id");
    optional_in(t.bias_id(), "bias_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    PTERUN_CHECK(rank(out_.inputs[0]) >= 1, ErrorCode::InvalidProgram, label_,
                 ": the input has no dims");
    expect_rank(out_.inputs[1], 2, "filter");
    expect_rank(out_.inputs[2], 1, "bias");
  }

  void read_conv() {
    const auto& t = table<fb::ConvNode>();
    in(t.input1_id(), "input1_id");
    in(t.filter_id(), "filter_id");
    optional_in(t.bias_id(), "bias_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    XnnConvParams p{t.padding_top(),
                    t.padding_right(),
                    t.padding_bottom(),
                    t.padding_left(),
                    t.kernel_height(),
                    t.kernel_width(),
                    t.subsampling_height(),
                    t.subsampling_width(),
                    t.dilation_height(),
                    t.dilation_width(),
                    t.group_input_channels(),
                    t.group_output_channels(),
                    t.groups(),
                    t.adjustment_height(),
                    t.adjustment_width()};
    expect_positive(p.kernel_height, "kernel_height");
    expect_positive(p.kernel_width, "kernel_width");
    expect_positive(p.subsampling_height, "subsampling_height");
    expect_positive(p.subsampling_width, "subsampling_width");
    expect_positive(p.dilation_height, "dilation_height");
    expect_positive(p.dilation_width, "dilation_width");
    expect_positive(p.groups, "groups");
    expect_positive(p.group_input_channels, "group_input_channels");
    expect_positive(p.group_output_channels, "group_output_channels");
    expect_rank(out_.inputs[0], 4, "input");
    expect_rank(out_.inputs[1], 4, "filter");
    expect_rank(out_.inputs[2], 1, "bias");
    expect_rank(out_.outputs[0], 4, "output");
    out_.params = p;
  }

  void read_pooling() {
    const auto& t = table<fb::PoolingNode>();
    in(t.input_id(), "input_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    XnnPoolingParams p{t.padding_top(),     t.padding_right(), t.padding_bottom(), t.padding_left(),
                       t.pooling_height(),  t.pooling_width(), t.stride_height(),  t.stride_width(),
                       t.dilation_height(), t.dilation_width()};
    expect_positive(p.pooling_height, "pooling_height");
    expect_positive(p.pooling_width, "pooling_width");
    expect_positive(p.stride_height, "stride_height");
    expect_positive(p.stride_width, "stride_width");
    expect_rank(out_.inputs[0], 4, "input");
    expect_rank(out_.outputs[0], 4, "output");
    out_.params = p;
  }

  void read_argmax_pooling() {
    const auto& t = table<fb::ArgMaxPooling2d>();
    in(t.input_id(), "input_id");
    out(t.output_value_id(), "output_value_id");
    out(t.output_index_id(), "output_index_id");
    out_.flags = t.flags();
    XnnArgMaxPoolingParams p{t.padding_top(),  t.padding_right(),  t.padding_bottom(),
                             t.padding_left(), t.pooling_height(), t.pooling_width()};
    expect_positive(p.pooling_height, "pooling_height");
    expect_positive(p.pooling_width, "pooling_width");
    expect_rank(out_.inputs[0], 4, "input");
    expect_rank(out_.outputs[0], 4, "output");
    expect_rank(out_.outputs[1], 4, "index output");
    PTERUN_CHECK(out_.outputs[0] != out_.outputs[1], ErrorCode::InvalidProgram, label_,
                 ": the value and index outputs are the same value");
    out_.params = p;
  }

  void read_concat() {
    const auto& t = table<fb::ConcatNode>();
    size_t n = static_cast<size_t>(out_.type) - static_cast<size_t>(XnnNodeType::Concatenate2) + 2;
    if (out_.type == XnnNodeType::Concatenate5) n = 5;
    const uint32_t ids[] = {t.input1_id(), t.input2_id(), t.input3_id(), t.input4_id(),
                            t.input5_id()};
    const char* fields[] = {"input1_id", "input2_id", "input3_id", "input4_id", "input5_id"};
    for (size_t i = 0; i < n; ++i) in(ids[i], fields[i]);
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    size_t r = rank(out_.outputs[0]);
    PTERUN_CHECK(t.axis() < r, ErrorCode::InvalidProgram, label_, ": axis ", t.axis(),
                 " is not a dim of the ", r, "-d output");
    for (size_t i = 0; i < n; ++i) expect_rank(out_.inputs[i], r, fields[i]);
    out_.params = XnnConcatParams{t.axis()};
  }

  void read_transpose() {
    const auto& t = table<fb::StaticTranspose>();
    in(t.input_id(), "input_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    XnnTransposeParams p{copy_uints(t.perm())};
    size_t r = rank(out_.inputs[0]);
    PTERUN_CHECK(t.num_dims() == p.perm.size() && p.perm.size() == r, ErrorCode::InvalidProgram,
                 label_, ": num_dims ", t.num_dims(), " and a perm of ", p.perm.size(),
                 " entries do not match the ", r, "-d input");
    std::vector<bool> seen(r, false);
    for (uint32_t d : p.perm) {
      PTERUN_CHECK(d < r && !seen[d], ErrorCode::InvalidProgram, label_,
                   ": perm is not a permutation of 0..", r - 1);
      seen[d] = true;
    }
    expect_rank(out_.outputs[0], r, "output");
    out_.params = std::move(p);
  }

  void read_resize() {
    const auto& t = table<fb::StaticResizeBilinear2D>();
    in(t.input_id(), "input_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    expect_positive(t.new_height(), "new_height");
    expect_positive(t.new_width(), "new_width");
    expect_rank(out_.inputs[0], 4, "input");
    expect_rank(out_.outputs[0], 4, "output");
    out_.params = XnnResizeParams{t.new_height(), t.new_width()};
  }

  void read_pad() {
    const auto& t = table<fb::StaticConstantPad>();
    in(t.input_id(), "input_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    XnnPadParams p{copy_uints(t.pre_paddings()), copy_uints(t.post_paddings()), t.padding_value()};
    size_t r = rank(out_.inputs[0]);
    PTERUN_CHECK(t.pre_paddings() && t.post_paddings() && p.pre_paddings.size() == r &&
                     p.post_paddings.size() == r,
                 ErrorCode::InvalidProgram, label_, ": ", p.pre_paddings.size(), " pre and ",
                 p.post_paddings.size(), " post paddings for a ", r, "-d input");
    expect_rank(out_.outputs[0], r, "output");
    out_.params = std::move(p);
  }

  void read_reshape() {
    const auto& t = table<fb::StaticReshape>();
    in(t.input_id(), "input_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    XnnReshapeParams p{copy_uints(t.new_shape())};
    PTERUN_CHECK(t.new_shape() != nullptr && t.num_dims() == p.new_shape.size(),
                 ErrorCode::InvalidProgram, label_, ": num_dims ", t.num_dims(),
                 " but new_shape has ", p.new_shape.size(), " entries");
    PTERUN_CHECK(p.new_shape.size() <= kXnnMaxRank, ErrorCode::InvalidProgram, label_,
                 ": new_shape has ", p.new_shape.size(), " dims, more than XNNPACK's ",
                 kXnnMaxRank);
    PTERUN_CHECK(std::count(p.new_shape.begin(), p.new_shape.end(), 0u) <= 1,
                 ErrorCode::InvalidProgram, label_,
                 ": new_shape has more than one inferred (0) dim");
    expect_rank(out_.outputs[0], p.new_shape.size(), "output");
    out_.params = std::move(p);
  }

  void read_slice() {
    const auto& t = table<fb::StaticSlice>();
    in(t.input_id(), "input_id");
    out(t.output_id(), "output_id");
    out_.flags = t.flags();
    XnnSliceParams p{copy_uints(t.offsets()), copy_uints(t.sizes())};
    size_t r = rank(out_.inputs[0]);
    PTERUN_CHECK(t.offsets() && t.sizes() && t.num_dims() == r && p.offsets.size() == r &&
                     p.sizes.size() == r,
                 ErrorCode::InvalidProgram, label_, ": num_dims ", t.num_dims(), ", ",
                 p.offsets.size(), " offsets and ", p.sizes.size(), " sizes for a ", r, "-d input");
    expect_rank(out_.outputs[0], r, "output");
    out_.params = std::move(p);
  }

  const fb::Node& node_;
  const std::vector<XnnValueDesc>& values_;
  const std::unordered_map<uint32_t, int32_t>& index_of_id_;
  std::string label_;
  XnnNodeDesc& out_;
};

}  // namespace

std::string_view xnn_node_type_name(XnnNodeType type) {
  static constexpr std::string_view kNames[] = {"(none)",
                                                "Add",
                                                "FullyConnected",
                                                "Softmax",
                                                "Sigmoid",
                                                "StaticTranspose",
                                                "Clamp",
                                                "Conv2d",
                                                "Div",
                                                "StaticResizeBilinear2D",
                                                "StaticConstantPad",
                                                "AvgPooling2d",
                                                "Minimum",
                                                "DepthwiseConv2d",
                                                "MaxPooling2d",
                                                "Multiply",
                                                "Subtract",
                                                "Floor",
                                                "Convert",
                                                "GlobalAvgPooling2d",
                                                "StaticReshape",
                                                "ArgMaxPooling2d",
                                                "SquareRoot",
                                                "Ceiling",
                                                "Hardswish",
                                                "LeakyReLU",
                                                "Maximum",
                                                "Negate",
                                                "Square",
                                                "ELU",
                                                "Abs",
                                                "PReLU",
                                                "Concatenate2",
                                                "Concatenate3",
                                                "Concatenate4",
                                                "StaticSlice",
                                                "ScaledDotProductAttention",
                                                "BatchMatrixMultiply",
                                                "Concatenate5",
                                                "ConvTranspose2d",
                                                "ReciprocalSquareRoot",
                                                "Log",
                                                "Gelu",
                                                "Tanh",
                                                "Exp",
                                                "Sin",
                                                "Copy",
                                                "Cos"};
  static_assert(std::size(kNames) == kXnnMaxNodeType + 1);
  auto i = static_cast<size_t>(type);
  return i < std::size(kNames) ? kNames[i] : "(unknown)";
}

XnnNodeDesc read_xnn_node(const fb::Node& node, const std::vector<XnnValueDesc>& values,
                          const std::unordered_map<uint32_t, int32_t>& index_of_id,
                          const std::string& what) {
  auto raw = static_cast<unsigned>(node.xnode_union_type());
  PTERUN_CHECK(raw != 0, ErrorCode::InvalidProgram, what, ": has no node type");
  PTERUN_CHECK(raw <= kXnnMaxNodeType, ErrorCode::InvalidProgram, what, ": unknown node type ", raw,
               " (this reader knows 1..", int{kXnnMaxNodeType}, ")");
  XnnNodeDesc out;
  out.type = static_cast<XnnNodeType>(raw);
  out.debug_handle = node.debug_handle();
  std::string label = str_cat(what, " (", xnn_node_type_name(out.type), ")");
  if (const auto* range = node.output_min_max()) {
    out.output_min_max = XnnOutputRange{range->output_min(), range->output_max()};
    PTERUN_CHECK(range->output_min() <= range->output_max(), ErrorCode::InvalidProgram, label,
                 ": output_min ", range->output_min(), " is not at most output_max ",
                 range->output_max());
  }
  NodeReader(node, values, index_of_id, label, out).read();
  return out;
}

}  // namespace pterun::format
