#pragma once

// One XNNPACK delegate's graph as pterun kernel calls (docs/format.md,
// "How delegates run"): each node becomes one call of an `xnnpack::`
// operator (pterun/ops/xnnpack.h) whose tensors keep XNNPACK's dims in
// memory order. External values are the delegate call's own arguments,
// constants become constant tensors over the named-data bytes, internal
// values become tensors in extra planned memory. Internal to delegates/.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "pterun/delegates/method_builder.h"
#include "pterun/delegates/xnnpack_quant.h"
#include "pterun/format/xnnpack_reader.h"

namespace pterun::delegates {

/// The dtype pterun computes an XNNPACK datatype in (those
/// xnnpack_unsupported() lets through).
DType dtype_of(format::XnnDatatype t);

/// True for a value that is neither a constant nor one of the delegate's
/// external values.
inline bool is_internal(const format::XnnValueDesc& v) {
  return !v.is_constant && v.external_id == format::kXnnInvalidId;
}

/// Why pterun cannot run `graph` (a node type, datatype or flag it does not
/// implement), naming the first such node; empty when it can.
std::string xnnpack_unsupported(const format::XnnGraphDesc& graph);

/// Every operator name the lowering emits.
std::span<const std::string_view> xnnpack_operator_names();

/// Lowers the calls of one delegate whose graph pterun can run.
class XnnpackLowering {
 public:
  /// `context` names the delegate in messages ("method 'forward',
  /// delegate 0 (XnnpackBackend)").
  XnnpackLowering(MethodBuilder& builder, const format::XnnGraphDesc& graph, std::string context);

  /// Appends the kernel calls of one DelegateCall with arguments `args` to
  /// `out`. Its internal values are placed from byte `arena_base` of memory
  /// id 1; returns the bytes they need from there. Error InvalidProgram
  /// when an argument does not match the graph's external value.
  uint64_t lower_call(std::span<const int32_t> args, uint64_t arena_base,
                      std::vector<format::InstructionDesc>& out);

 private:
  int32_t constant(int32_t xnn_value, DType dtype, bool transpose = false);
  // xnnpack_folding.cpp: what runs inside other calls or needs no call.
  void find_conv_epilogues();
  void find_nchw_inputs(const std::vector<int>& reads, const std::vector<int64_t>& reader);
  void check_external(const format::XnnValueDesc& v, int32_t arg) const;
  // view_of[v]: the external input argument whose bytes internal value v,
  // a reshape of it, shares; -1 for the others.
  std::vector<int32_t> input_views(const std::vector<int32_t>& mapped, bool dynamic) const;

  MethodBuilder& b_;
  const format::XnnGraphDesc& g_;
  std::string context_;
  // Constant tensors made so far, by (graph value, dtype, transposed):
  // shared by every call of the delegate.
  std::map<std::tuple<int32_t, DType, bool>, int32_t> constants_;
  // epilogue_of_[n]: the HardSwish or Add node that runs inside convolution
  // node n, or -1; residual_of_[n]: the value that Add adds to the
  // convolution's output, or -1; absorbed_[m]: node m runs inside another
  // (find_conv_epilogues).
  std::vector<int64_t> epilogue_of_;
  std::vector<int32_t> residual_of_;
  std::vector<bool> absorbed_;
  // nchw_input_of_[n]: the NCHW value convolution node n reads through,
  // its StaticTranspose absorbed (find_nchw_inputs), or -1.
  std::vector<int32_t> nchw_input_of_;
  // Quantized filters made so far, by graph value.
  std::map<int32_t, QuantFilter> quant_filters_;
  StaticLowering static_;
};

}  // namespace pterun::delegates
