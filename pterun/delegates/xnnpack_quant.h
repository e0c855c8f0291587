#pragma once

// The quantized nodes of an XNNPACK graph that pterun runs (issue 16, first
// part): dynamically quantized fully connected layers, a Convert of float32
// activations to qdint8 read only by FullyConnected nodes whose filters are
// int8 per channel (qcint8), 4-bit per channel (qcint4) or 4-bit blockwise
// (qbint4). Each such FullyConnected becomes one
// xnnpack::fully_connected_dq call on the Convert's float input; the
// Convert itself runs nothing. Internal to delegates/.

#include <cstdint>
#include <optional>
#include <string>

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

/// A quantized filter's tensors as xnnpack::fully_connected_dq takes them.
struct QuantFilter {
  int32_t weight;  // int8 [N, K] or uint8 [N, ceil(K / 2)]
  int32_t scales;  // float32 [N, B]
  int32_t sums;    // [N]: int32 row sums (8-bit), float32 scaled block sums (4-bit)
  int64_t bits;    // 8 or 4
};

/// Builds them for constant `filter`. Error InvalidProgram (naming `what`)
/// when a scale is not a positive normal float (XNNPACK refuses those too).
QuantFilter quant_filter(MethodBuilder& b, const format::XnnValueDesc& filter,
                         const std::string& what);

}  // namespace pterun::delegates
