#pragma once

// The XNNPACK delegate payload (docs/format.md, "XNNPACK payloads"), decoded
// and checked: a plain description that the delegate executor builds its
// steps from, with every id resolved to a value index, every constant's
// bytes located and sized, and nothing left that refers back into the
// FlatBuffer.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/format/named_data_map.h"
#include "pterun/format/program_desc.h"

namespace pterun::format {

/// The delegate id of the payloads read_xnnpack_graph understands.
inline constexpr std::string_view kXnnpackBackendId = "XnnpackBackend";

/// XNNPACK's "no value" id (XNN_INVALID_VALUE_ID): the external id of an
/// internal value, and an unused optional node slot in the file.
inline constexpr uint32_t kXnnInvalidId = 0xFFFFFFFF;

/// An unused optional node slot (a missing bias) in XnnNodeDesc::inputs.
inline constexpr int32_t kXnnNoValue = -1;

/// The most dims an XNNPACK tensor may have (XNN_MAX_TENSOR_DIMS).
inline constexpr size_t kXnnMaxRank = 6;

/// Element types, numbered as the file stores them.
enum class XnnDatatype : uint8_t {
  Fp32 = 1,
  Fp16 = 2,
  QInt8 = 3,    // int8, per-tensor scale and zero point
  QUInt8 = 4,   // uint8, per tensor
  QInt32 = 5,   // int32, per tensor
  QCInt8 = 6,   // int8, per-channel scales, zero point 0
  QCInt32 = 7,  // int32, per channel
  QCInt4 = 8,   // 4-bit, per channel, zero point 8, element 2i in the low nibble
  QDInt8 = 9,   // int8 quantized at run time, parameters per row
  QBInt4 = 10,  // 4-bit, blockwise bf16 scales, zero point 8
  QPInt8 = 11,  // int8 packed with its row parameters (XNNPACK-internal)
  Int32 = 12,
  PFp32 = 13,  // packed fp32 (XNNPACK-internal)
  BF16 = 14,
};

/// "fp32", "qcint4", ... (the file's names without the xnn_datatype_ prefix).
std::string_view xnn_datatype_name(XnnDatatype type);

/// Bytes that `dims` of `type` occupy: numel x element size, and for the
/// 4-bit types rows x ceil(last dim / 2). Nullopt when it overflows.
std::optional<uint64_t> xnn_nbytes(XnnDatatype type, std::span<const uint32_t> dims);

enum class XnnQuantKind : uint8_t {
  None,             // a plain value (fp32, fp16, bf16, int32)
  PerTensor,        // qint8, quint8, qint32
  PerChannel,       // qcint8, qcint32, qcint4
  PerTokenDynamic,  // qdint8: computed at run time
  PerChannelGroup,  // qbint4
};

/// Quantization parameters, checked against the value's dims and datatype.
struct XnnQuantParams {
  XnnQuantKind kind = XnnQuantKind::None;
  float scale = 0;                 // PerTensor
  int32_t zero_point = 0;          // PerTensor; the other kinds' zero point is implicit
  uint32_t channel_dim = 0;        // PerChannel, PerChannelGroup
  uint32_t group_size = 0;         // PerChannelGroup: input channels per block
  uint32_t num_scales = 0;         // PerChannel, PerChannelGroup
  uint32_t num_nonbatch_dims = 0;  // PerTokenDynamic
  // PerChannel / PerChannelGroup scales: either bytes from named data
  // (num_scales fp32 for PerChannel, num_scales bf16 for PerChannelGroup;
  // not necessarily aligned) or, in older files, fp32 inline scales.
  std::span<const uint8_t> scale_data;
  std::string scale_key;
  std::vector<float> inline_scales;
};

struct XnnValueDesc {
  uint32_t id = 0;  // the serialized id (id_out), as messages and nodes in the file name it
  XnnDatatype datatype = XnnDatatype::Fp32;
  std::vector<uint32_t> dims;  // in memory order: an NHWC value lists N, H, W, C
  uint64_t numel = 0;
  uint64_t nbytes = 0;  // see xnn_nbytes
  // External values: the index into the delegate call's args (inputs
  // first, then outputs) and which side it is on. kXnnInvalidId otherwise.
  uint32_t external_id = kXnnInvalidId;
  bool is_input = false;
  bool is_output = false;
  // Constants: exactly nbytes bytes (not necessarily aligned), and the
  // named-data key they came from (empty for legacy inline data).
  bool is_constant = false;
  std::span<const uint8_t> data;
  std::string constant_key;
  XnnQuantParams quant;
  // XN00 files only: this fp external input is quantized to this type at
  // run time (per row), as if followed by a Convert node.
  std::optional<XnnDatatype> dq_datatype;
};

/// Node types, numbered as the file stores them (the union's type byte).
enum class XnnNodeType : uint8_t {
  Add = 1,
  FullyConnected = 2,
  Softmax = 3,
  Sigmoid = 4,
  StaticTranspose = 5,
  Clamp = 6,
  Conv2d = 7,
  Div = 8,
  StaticResizeBilinear2D = 9,
  StaticConstantPad = 10,
  AvgPooling2d = 11,
  Minimum = 12,
  DepthwiseConv2d = 13,
  MaxPooling2d = 14,
  Multiply = 15,
  Subtract = 16,
  Floor = 17,
  Convert = 18,
  GlobalAvgPooling2d = 19,
  StaticReshape = 20,
  ArgMaxPooling2d = 21,
  SquareRoot = 22,
  Ceiling = 23,
  Hardswish = 24,
  LeakyReLU = 25,
  Maximum = 26,
  Negate = 27,
  Square = 28,
  ELU = 29,
  Abs = 30,
  PReLU = 31,
  Concatenate2 = 32,
  Concatenate3 = 33,
  Concatenate4 = 34,
  StaticSlice = 35,
  ScaledDotProductAttention = 36,
  BatchMatrixMultiply = 37,
  Concatenate5 = 38,
  ConvTranspose2d = 39,
  ReciprocalSquareRoot = 40,
  Log = 41,
  Gelu = 42,
  Tanh = 43,
  Exp = 44,
  Sin = 45,
  Copy = 46,
  Cos = 47,
};
inline constexpr uint8_t kXnnMaxNodeType = 47;

/// "FullyConnected", "Conv2d", ... (ExecuTorch's names without "XNN").
std::string_view xnn_node_type_name(XnnNodeType type);

/// Conv2d, DepthwiseConv2d, ConvTranspose2d. Input and output are NHWC.
struct XnnConvParams {
  uint32_t padding_top = 0, padding_right = 0, padding_bottom = 0, padding_left = 0;
  uint32_t kernel_height = 0, kernel_width = 0;
  uint32_t subsampling_height = 0, subsampling_width = 0;  // strides
  uint32_t dilation_height = 0, dilation_width = 0;
  uint32_t group_input_channels = 0, group_output_channels = 0, groups = 0;
  uint32_t adjustment_height = 0, adjustment_width = 0;  // ConvTranspose2d output padding
};

/// AvgPooling2d, MaxPooling2d (NHWC). Dilation is 0 in AvgPooling2d nodes.
struct XnnPoolingParams {
  uint32_t padding_top = 0, padding_right = 0, padding_bottom = 0, padding_left = 0;
  uint32_t pooling_height = 0, pooling_width = 0;
  uint32_t stride_height = 0, stride_width = 0;
  uint32_t dilation_height = 0, dilation_width = 0;
};

/// ArgMaxPooling2d (NHWC): the stride is the window.
struct XnnArgMaxPoolingParams {
  uint32_t padding_top = 0, padding_right = 0, padding_bottom = 0, padding_left = 0;
  uint32_t pooling_height = 0, pooling_width = 0;
};

/// StaticTranspose: output dim i is input dim perm[i].
struct XnnTransposeParams {
  std::vector<uint32_t> perm;
};

/// StaticReshape: a 0 entry is inferred (at most one).
struct XnnReshapeParams {
  std::vector<uint32_t> new_shape;
};

/// StaticSlice: one offset and size per input dim (step 1).
struct XnnSliceParams {
  std::vector<uint32_t> offsets;
  std::vector<uint32_t> sizes;
};

/// StaticConstantPad: one pre and post padding per input dim.
struct XnnPadParams {
  std::vector<uint32_t> pre_paddings;
  std::vector<uint32_t> post_paddings;
  float padding_value = 0;
};

/// StaticResizeBilinear2D (NHWC); flags 0x8 = align corners.
struct XnnResizeParams {
  uint32_t new_height = 0, new_width = 0;
};

/// Concatenate2..5, along `axis` of the memory-order dims.
struct XnnConcatParams {
  uint32_t axis = 0;
};

/// LeakyReLU (negative slope) and ELU (alpha).
struct XnnScalarParams {
  float value = 0;
};

using XnnNodeParams =
    std::variant<std::monostate, XnnConvParams, XnnPoolingParams, XnnArgMaxPoolingParams,
                 XnnTransposeParams, XnnReshapeParams, XnnSliceParams, XnnPadParams,
                 XnnResizeParams, XnnConcatParams, XnnScalarParams>;

/// The fused clamp of a node's output.
struct XnnOutputRange {
  float min = 0;
  float max = 0;
};

struct XnnNodeDesc {
  XnnNodeType type = XnnNodeType::Add;
  uint32_t debug_handle = 0;
  uint32_t flags = 0;
  std::optional<XnnOutputRange> output_min_max;
  // Value indices, in the node table's slot order:
  //   unary: [input]; binary, BatchMatrixMultiply, PReLU: [input1, input2];
  //   FullyConnected, convolutions: [input, filter, bias or kXnnNoValue];
  //   Concatenate<N>: the N inputs; ScaledDotProductAttention:
  //   [query, key, value, scale, mask].
  // Outputs: one, except ArgMaxPooling2d: [values, indices].
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  XnnNodeParams params;
};

/// One external value: its place among the delegate call's args.
struct XnnExternal {
  uint32_t external_id = 0;
  int32_t value = 0;  // index into XnnGraphDesc::values
};

struct XnnGraphDesc {
  bool has_header = false;  // XH00 header; false: legacy headerless payload
  std::string identifier;   // "XN00" or "XN01"
  std::string version;      // the graph's version string ("0")
  uint32_t num_externs = 0;
  std::vector<XnnValueDesc> values;  // in file order
  std::vector<XnnNodeDesc> nodes;    // in execution order
  std::vector<XnnExternal> inputs;   // sorted by external id
  std::vector<XnnExternal> outputs;  // sorted by external id

  /// Number of nodes of each type, indexed by type number (0 unused).
  std::vector<size_t> node_counts() const;
  size_t num_constants() const;
  uint64_t constant_bytes() const;
};

/// Decodes and checks an XNNPACK payload: the XH00 header (or the legacy
/// headerless form), the FlatBuffer, every value, node and constant.
/// Constant bytes come from `named_data` (and from the payload itself in
/// the older forms); `num_args` is the delegate call's argument count, which
/// every external id must stay below. The result's spans point into the
/// payload and the named data. Error InvalidProgram, with `context` and
/// the value or node index and field, for anything out of range.
XnnGraphDesc read_xnnpack_graph(std::span<const uint8_t> payload, const NamedDataMap& named_data,
                                size_t num_args, std::string_view context = "XNNPACK payload");

/// The argument count of the DelegateCall instructions that call delegate
/// `delegate_index` of `method`; nullopt when no instruction calls it. Error
/// InvalidProgram when two calls pass different counts.
std::optional<size_t> delegate_call_num_args(const MethodDesc& method, size_t delegate_index);

/// read_xnnpack_graph for delegate `delegate_index` of `method`, with the
/// given named data and the argument count of its call. Error
/// InvalidArgument when there is no such delegate or it is not an
/// XnnpackBackend one, InvalidProgram when no instruction calls it.
XnnGraphDesc read_xnnpack_delegate(const MethodDesc& method, size_t delegate_index,
                                   const NamedDataMap& named_data);

}  // namespace pterun::format
