#pragma once

// The quantized nodes of an XNNPACK graph that pterun runs (issue 16, first
// part): dynamically quantized fully connected layers, a Convert of float32
// activations to qdint8 read only by FullyConnected nodes whose filters are
// int8 per channel (qcint8), 4-bit per channel (qcint4) or 4-bit blockwise
// (qbint4). Each such FullyConnected becomes one
// xnnpack::fully_connected_dq call on the Convert's float input; the
// Convert itself runs nothing. Internal to delegates/.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pterun/delegates/method_builder.h"
#include "pterun/format/xnnpack_reader.h"

namespace pterun::delegates {

/// Whether node `n` of `graph` reads or writes a quantized value (or a
/// float input quantized at run time): nullopt when it does not; else why
/// pterun cannot run it, empty when it can.
std::optional<std::string> xnnpack_quantized_node(const format::XnnGraphDesc& graph, size_t n);

/// The float value a FullyConnected node's qdint8 input is quantized from
/// (the Convert's input, or the input itself for a legacy dq_datatype
/// input), and the dims each quantization slice spans.
struct DynamicSource {
  int32_t value;
  int64_t num_nonbatch_dims;
};
DynamicSource dynamic_source(const format::XnnGraphDesc& graph, int32_t qdint8_value);

/// Scale `i` of quantization parameters `q`: the per-tensor scale, or entry
/// i of the per-channel (fp32) or blockwise (bf16) scales, from named data or
/// inline. `i` within the count the reader checked.
float xnn_scale(const format::XnnQuantParams& q, size_t i);

/// A quantized filter's tensors as xnnpack::fully_connected_dq takes them.
struct QuantFilter {
  int32_t weight;  // int8 [N, K] or uint8 [N, ceil(K / 2)]
  int32_t scales;  // [N, B]: bfloat16 (blockwise) or float32 (per channel)
  int32_t sums;    // [N]: int32 row sums (8-bit), float32 scaled block sums (4-bit)
  int64_t bits;    // 8 or 4
};

/// Builds them for constant `filter`. Error InvalidProgram (naming `what`)
/// when a scale is not a positive normal float (XNNPACK refuses those too).
QuantFilter quant_filter(MethodBuilder& b, const format::XnnValueDesc& filter,
                         const std::string& what);

// ---- static int8 graphs (xnnpack_static.cpp) ------------------------------------

/// Whether node `n` touches a static int8 value (qint8, qcint8, qint32,
/// qcint32) and no value quantized at run time.
bool xnnpack_static_int8(const format::XnnGraphDesc& graph, size_t n);

/// Why pterun cannot run static int8 node `n`, empty when it can: Convert
/// between fp32 and qint8; FullyConnected, Conv2d and DepthwiseConv2d with
/// constant qcint8 (or per-tensor qint8, zero point 0) filters and qcint32 /
/// qint32 biases; Add of equal shapes; GlobalAvgPooling2d; MaxPooling2d,
/// Clamp, StaticTranspose, StaticReshape and Copy between qint8 values of
/// equal parameters. Every qint8 value needs a positive normal scale and an
/// int8 zero point. A Clamp may change the parameters (a requantization).
std::string xnnpack_static_node(const format::XnnGraphDesc& graph, size_t n);

/// Lowers the static int8 nodes whose calls carry quantization parameters
/// (Convert, FullyConnected, Conv2d, DepthwiseConv2d, Add,
/// GlobalAvgPooling2d, MaxPooling2d, Clamp) into the integer kernels; the
/// shape nodes take the float lowering (their operators move int8 too).
class StaticLowering {
 public:
  StaticLowering(MethodBuilder& builder, const format::XnnGraphDesc& graph);

  /// Whether node type `type` is lowered here.
  static bool lowers(format::XnnNodeType type);

  /// Appends node `n`'s kernel call; `tensor(v)` is the method value of the
  /// graph's non-constant value v; `dynamic`: the call's shapes vary. Error
  /// InvalidProgram for a filter scale that is not a positive normal float;
  /// NotImplemented for a Clamp that requantizes a value of dynamic shape.
  void lower(size_t n, const std::function<int32_t(int32_t)>& tensor, bool dynamic,
             std::vector<format::InstructionDesc>& out);

 private:
  struct Filter {
    int32_t weight = -1;        // int8, torch's layout
    int32_t scale_tensor = -1;  // float32 [OC] or [1]
    int32_t sums = -1;          // int32 [OC]
    std::vector<float> scales;
  };
  const Filter& filter(int32_t value, bool depthwise);
  int32_t bias(int32_t value, const Filter& f);
  /// quantized_decomposed::add.out of a (x's parameters) and b into `out`
  /// (y's parameters, clamped to [lo, hi]).
  format::InstructionDesc add(int32_t a, const format::XnnValueDesc& x, int32_t b, double b_scale,
                              int64_t b_zero_point, const format::XnnValueDesc& y, int64_t lo,
                              int64_t hi, int32_t out);
  int32_t floats(const std::vector<float>& values);

  MethodBuilder& b_;
  const format::XnnGraphDesc& g_;
  std::map<int32_t, Filter> filters_;
};

}  // namespace pterun::delegates
