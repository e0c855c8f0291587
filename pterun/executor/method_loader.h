#pragma once

// Method::Loader, the load-time builder of a Method (internal to executor/):
// method.cpp builds values, tensors, steps and the input/output plans;
// method_passes.cpp holds the passes that rewrite the step list (constant
// folding, elementwise fusion, kernel rewrites) and the analyses they share;
// method_conv.cpp those around convolutions and the hardswish.

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pterun/executor/desc_util.h"
#include "pterun/executor/method.h"
#include "pterun/executor/rewrite.h"
#include "pterun/format/program_desc.h"
#include "pterun/kernels/registry.h"

namespace pterun {
namespace loader_detail {

using format::InstructionKind;
using format::TensorDesc;
using format::TensorStorage;

inline bool is_state(const TensorDesc& t) {
  return t.storage == TensorStorage::PlannedWithData ||
         t.storage == TensorStorage::ExternalMutable ||
         (t.storage == TensorStorage::Planned && (t.memory_id >= 2 || !t.name.empty()));
}

inline bool is_planned(const TensorDesc& t) {
  return desc::planned(t);
}
using desc::overlaps;

}  // namespace loader_detail

struct Method::Loader {
  Method& m;
  const format::MethodDesc& d;
  std::vector<int> tensor_of_value;  // value index -> index in m.tensors_, or -1
  std::set<int32_t> written;         // tensor values a kernel writes (its return entry)
  std::set<int32_t> aliased;         // values whose data a kernel re-points (et_view) or moves
  std::set<int32_t> pinned;          // values fused kernels read or write through views
  // Those views, each with the tensor whose bytes it reads: made to follow
  // it after the passes that move memory (follow_views).
  // A view may start `offset` bytes into its tensor.
  struct FollowingView {
    Tensor* view;
    const Tensor* source;
    size_t offset;
  };
  std::vector<FollowingView> views;

  void analyse_instructions();
  void check_support();
  void allocate_buffers();
  // `bytes` from the host at `dst` in the method's memory (load time).
  void fill(void* dst, const void* src, size_t bytes);
  // Constant bytes as the method's kernels read them: in place on the CPU
  // (copied when not aligned to kConstantAlignment), the program's shared
  // upload on a GPU.
  static constexpr uintptr_t kConstantAlignment = 16;
  void* constant_address(const uint8_t* host, size_t bytes);
  uint8_t* planned_address(const format::TensorDesc& t, bool& fresh_shared);
  void build_tensors();
  static void check_external_layout(const format::TensorDesc& t, const format::ExternalEntry& e,
                                    const std::string& what);
  // Unplanned tensors that kernels write (outputs exported unplanned, for
  // instance) get memory of their own; views and inputs do not.
  void allocate_unplanned_outputs(std::vector<backend::Allocation>& extra);
  // A tensor that is read but has no data from anywhere (not planned, not a
  // constant, not an input, not written by a kernel) would be read through
  // a null pointer: refuse the program instead (docs/python-api.md, B22).
  void check_data_sources();
  void build_values();
  void build_steps();
  // Views the exporter resolved by memory planning alone: a tensor no
  // instruction writes, placed inside another tensor's planned bytes (a
  // view_copy of an input, for one, becomes a second tensor at the input's
  // offset). Such a view belongs to `vi`, written by instruction `written_at`
  // (-1: before the run, as inputs are), when it lies inside `vi` and no
  // other instruction writes over it between then and its first read. It
  // must follow `vi` wherever `vi` is re-pointed. Instructions are taken in
  // chain order.
  std::vector<std::pair<Tensor*, size_t>> followers(int32_t vi, int64_t written_at);
  // The position of the last instruction (in chain order) returning `vi`.
  int64_t last_writer(int32_t vi) const;
  // Values load-time passes must leave alone: inputs, outputs, state and
  // values re-pointed at run time.
  std::vector<bool> kept_values() const;
  // Where the fusion passes stand: per chain, which steps are no-ops
  // already (folded or fused away), and the chain-order position of its
  // first step (what followers() and last_writer() count in).
  struct ChainLayout {
    std::vector<std::vector<bool>> idle;
    std::vector<int64_t> start;
  };
  ChainLayout chain_layout() const;
  // Constant folding (constant_fold.h): each instruction runs once here into
  // memory of its own and leaves the step list. One whose kernel fails
  // stays (the error then comes from the call, as before). On a GPU the
  // folded kernels run on the method's stream, waited for once at the end.
  void fold_constants();
  // Elementwise fusion (rewrite.h, find_elementwise_fusions): each tree of
  // elementwise steps runs as one fused elementwise program (ops/fused.h)
  // where the device has the kernel, no view reads a value it drops, and
  // PTERUN_FUSE_ELEMENTWISE is not 0.
  void fuse_elementwise();
  // Convolution fusion (rewrite.h): batch norm folded into the weights, a
  // relu or hardtanh into the convolution's clamp (CPU methods).
  void fuse_convolutions();
  void fold_batch_norm(const ConvFusion& f);
  /// The program's bytes of constant `v` (in the program or its external
  /// data), exactly its nbytes; empty for anything else.
  std::span<const uint8_t> constant_bytes(int32_t v) const;
  /// Whether `f`'s batch norm can be folded: every tensor it reads is a
  /// constant whose bytes the program holds (constant_bytes).
  bool foldable(const ConvFusion& f) const;
  // A convolution fusion whose fused output the memory plan put over the
  // convolution's input: the convolution writes its own output `own`, and
  // step `step` of chain `chain` copies it over `out` (alias_copy.out).
  struct FusedCopy {
    size_t chain, step;
    int32_t own, out;
  };
  std::vector<FusedCopy> fused_copies;
  // After the other passes: where `own`'s bytes stay untouched until the
  // last reader of `out`, the readers take `own` and the copy goes.
  void skip_fused_copies();
  // Hardswish fusion (rewrite.h): torch's decomposed hardswish that no
  // convolution took runs as one hardswish.out step.
  void fuse_hardswish();
  // Attention fusion (rewrite.h, find_attention_fusions): torch's
  // decomposed scaled-dot-product attention runs as one kernel
  // (kAttentionKernel) reading and writing views of the values' bytes.
  void fuse_attention();
  // Rotary fusion (rewrite.h, find_rotary_fusions): torch's rotate-half
  // rotary embedding (seven steps) runs as one kRotaryHalfKernel.
  void fuse_rotary();
  void fuse_rms_norm();
  // Residual-add fusion (rewrite.h, find_gemm_add_fusions): an add after
  // an addmm or mm runs as one product with the residual in its epilogue
  // (kGemmAddKernel), where the device has the kernel.
  void fuse_gemm_add();
  // Points each fused kernel's view at the bytes of the tensor it reads,
  // after the passes that give tensors memory of their own.
  void follow_views();
  // Safe-softmax fusion (rewrite.h, find_safe_softmax_fusions): torch's
  // decomposed attention's softmax and the five steps that zero its dead
  // lines run as one kernel.
  void fuse_safe_softmax();
  // Quantized input and output fusion (rewrite.h, find_quant_io_fusions):
  // the quantize before and the dequantize after a quantized linear layer,
  // and the quantize and transpose before an XNNPACK int8 convolution, run
  // inside it where the device's kernels take float32
  // (QuantBackend::float_io).
  void fuse_quant_io();
  // Applies pattern fusions where the device has the kernel and memory
  // allows: no view reads a dropped value's bytes, the output overlaps the
  // input element for element or not at all, the scalars hold.
  void apply_pattern_fusions(const std::vector<PatternFusion>& found, const ChainLayout& layout);
  // Whether each one-element float32 tensor holds its value.
  bool scalars_hold(const std::vector<std::pair<int32_t, double>>& scalars) const;
  // Whether step k of chain c still runs its instruction's own operator
  // (no earlier pass replaced or idled it).
  bool runs_own_operator(size_t c, size_t k) const;
  // Whether every step of pattern fusion `f` still runs its own operator.
  bool runs_own_operators(const PatternFusion& f) const;
  // Whether a view reads one of the values a fusion drops (each with its
  // writer's step in a chain that starts at instruction `chain_start`).
  bool any_viewed(const std::vector<std::pair<int32_t, size_t>>& dropped, int64_t chain_start);
  // Load-time kernel rewrites (rewrite.h), where the device has the kernel.
  void apply_rewrites();
  // Channels-last activations between convolutions where that is faster
  // (layout.h): the chosen tensors get dim order [0, 2, 3, 1] over the same
  // memory. CPU methods, before the passes that compare layouts;
  // PTERUN_CHANNELS_LAST=0 turns it off.
  void choose_layouts();
  // Integer compute for quantized chains (quant_fusion.h, method_quant.cpp):
  // each chain's quantize runs one integer kernel where the device has it
  // and memory allows; before constant folding, so that int8 weights stay
  // int8.
  void fuse_quantized();
  // Moves tensor value `vi` (and the views planned inside it) into memory
  // of its own.
  void give_own_memory(int32_t vi);
  // The plain -kv export's KV-cache write-back (index_put + copy_ of the
  // whole cache) made a write in place (rewrite.h).
  void write_caches_in_place();
  // A decode step's start_pos read by the kernels that use it from the
  // tensor it came from, instead of by the host (rewrite.h).
  void read_positions_on_device();
  void replace_step(Step& s, kernels::KernelFn fn, const std::vector<int32_t>& args);
  // Inputs: planned inputs whose region other tensors reuse get a private
  // home, so a second execute() reads the same inputs (B11).
  void plan_inputs();
  void plan_outputs();
};

}  // namespace pterun
