#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pterun/format/program_desc.h"

namespace pterun {

/// How many instructions mention each value (arguments, items of list
/// arguments, moves, jump conditions), each instruction counted once: a
/// value one kernel writes and one other reads counts 2.
std::vector<int> count_uses(const format::MethodDesc& d);

/// Instruction `index` of chain `chain` may run the internal kernel named
/// `kernel` (kernels/internal_ops.h) with its own arguments: same results
/// for everything the method reads afterwards, less work.
struct KernelRewrite {
  size_t chain = 0;
  size_t index = 0;
  const char* kernel = nullptr;
};

/// The rewrites of a method, found from its instructions alone:
/// max_pool2d_with_indices.out whose indices no other instruction reads
/// computes the values only. Values marked in `keep` (inputs, outputs,
/// state, values re-pointed at run time) always get their full results.
std::vector<KernelRewrite> find_kernel_rewrites(const format::MethodDesc& d,
                                                const std::vector<bool>& keep);

/// A tree of elementwise instructions of one chain run as one
/// pterun::fused_elementwise.out (ops/fused.h) by instruction `root`, the
/// last of them, with `inputs` (the program's registers 0 ..) and `program`
/// (encoded steps); `out` is the root's out. The instructions `idle` run
/// nothing; `dropped` are the values they wrote (nothing reads them now)
/// with each writer's index in the chain.
struct ElementwiseFusion {
  /// A tensor the program reads: value `value` itself, or (`view`) its
  /// bytes seen with other sizes and dim order (a dense view: a permutation
  /// or a reshape of its elements, leading size-1 dims added), which
  /// broadcasts to the out's shape.
  struct Input {
    int32_t value = 0;
    bool view = false;
    std::vector<int64_t> sizes;
    std::vector<uint8_t> dim_order;
    bool broadcast = false;  // an expand: sizes broadcast to a larger shape
    bool operator==(const Input&) const = default;
  };
  size_t chain = 0;
  size_t root = 0;
  std::vector<size_t> idle;
  std::vector<Input> inputs;
  std::vector<double> program;
  int32_t out = 0;
  std::vector<std::pair<int32_t, size_t>> dropped;
  /// Inputs read after their planned lifetime (a later tenant of their
  /// planned bytes writes before the root runs) need memory of their own:
  /// (value to move, input) pairs, the value the input itself or the
  /// written value whose planned bytes hold it (a view resolved by
  /// planning, which must move with it); and (out, out) where the out
  /// would overlap an input otherwise than element for element.
  std::vector<std::pair<int32_t, int32_t>> own_memory;
};

/// Elementwise fusion: an instruction whose result only one later
/// elementwise instruction of its chain reads (not in `keep`) runs inside
/// that one. Elementwise here: the floating unary functions, neg, abs,
/// relu, silu, gelu, hardsigmoid, hardswish, hardtanh, clamp with scalar
/// bounds, add/sub/mul/div/maximum/minimum/pow of two tensors or of a
/// tensor and a scalar, rsub, and float-to-float copies (_to_copy,
/// _to_dim_order_copy, clone), every tensor float32, float16 or bfloat16
/// and each operator's compute type float32 or its operands' own dtype.
/// Layout copies of static shape (permute_copy, transpose_copy, t_copy,
/// view_copy, unsqueeze_copy, squeeze_copy, alias_copy, expand_copy) take
/// part too: they read a materialised tensor through a view (Input::view),
/// one layout copy of another composing into one view; a value the caller
/// keeps is never viewed (its bytes move at run time).
/// Only instructions marked in `candidate` (they still run their own
/// operator) take part; those marked in `idle` run nothing and are passed
/// over. An instruction is moved later, into its reader, only where no
/// instruction in between may write what it reads, or where only a later
/// tenant of an input's planned memory does (a value an instruction writes,
/// not kept, at most 64 MiB: `own_memory`); the root's out overlaps
/// an input element for element (same place, shape, order and dtype,
/// static shapes; never a view) or not at all, or moves to memory of its
/// own (on the same terms). At most
/// ops::kFusedMaxInputs inputs and kFusedMaxSteps steps a tree; trees of
/// one instruction are not reported. None in methods with jumps or moves.
/// A tree computes each step once per out element: with
/// `recompute_broadcasts` false (the CPU, where a per-row value recomputed
/// per element costs more than a pass), a value joins its reader only when
/// it has as many elements, and layout copies keep their own kernels (the
/// strided copy engine moves them faster than a program's gathers). The caller checks that no view
/// reads a dropped value's bytes.
std::vector<ElementwiseFusion> find_elementwise_fusions(
    const format::MethodDesc& d, const std::vector<bool>& keep,
    const std::vector<std::vector<bool>>& candidate, const std::vector<std::vector<bool>>& idle,
    bool recompute_broadcasts);

/// A convolution whose batch norm (and activation) run inside it: `conv`
/// runs `kernel` (kernels/internal_ops.h; null: convolution.out itself)
/// with `args` (value indices), after its weights and the bias are folded
/// from the batch norm's statistics; the instructions `idle` run nothing.
struct ConvFusion {
  size_t chain = 0;
  size_t conv = 0;
  std::vector<size_t> idle;
  const char* kernel = nullptr;
  std::vector<int32_t> args;
  int32_t input = 0, out = 0;  // of the fused step
  // Folding: weight' = weight * scale, bias' = (conv_bias - mean) * scale
  // + bn_bias, scale = bn_weight / sqrt(var + eps), per output channel.
  // The folded weights replace `weight`'s data and the folded bias
  // `mean`'s (both used by these instructions only); -1 for a None, and
  // `mean` -1 when no batch norm follows the convolution (nothing folded).
  int32_t weight = 0, conv_bias = -1, bn_weight = -1, bn_bias = -1, mean = 0, var = 0;
  double eps = 0;
  std::vector<std::pair<int32_t, size_t>> dropped;  // values nothing reads now, and their writer
  int32_t residual = -1;  // the tensor added to the result (kConvAdd*), or -1
  // One-element float32 tensors the fusion assumes hold these values (the
  // hardswish's 3 and 6: constants, or results of folded instructions).
  std::vector<std::pair<int32_t, double>> scalars;
};

/// convolution.out (forward, float32 constant weights and bias) whose
/// result only a _native_batch_norm_legit_no_training.out with float32
/// constant statistics reads (its other outputs unread), or no batch norm
/// (then one of the following must come), optionally then a
/// relu.out or hardtanh.out (min <= max), or torch's hardswish
/// decomposition, or an add.out of a residual (alpha 1, the same shape and
/// layout) optionally then a relu.out, that alone reads the normalised
/// result; none of the dropped values in `keep`,
/// every instruction between them marked in `idle`, no jumps or moves in the method. The caller
/// checks memory: that no view reads the dropped values' bytes and that
/// the fused output does not overlap the input, and overlaps the residual
/// exactly or not at all.
std::vector<ConvFusion> find_conv_fusions(const format::MethodDesc& d,
                                          const std::vector<bool>& keep,
                                          const std::vector<std::vector<bool>>& idle);

/// One instruction run by another kernel with other arguments (value
/// indices; the return entry last, as in a program's instruction).
struct KernelReplacement {
  size_t chain = 0;
  size_t index = 0;
  const char* kernel = nullptr;
  std::vector<int32_t> args;
};

/// A run of instructions of one chain that one kernel replaces: instruction
/// `replacement.index` runs `replacement.kernel` with its arguments and
/// the instructions `idle` run nothing. `input` and `out` are the tensor
/// the kernel reads and the one it writes; `dropped` the values the run
/// wrote that nothing reads now, with their writers; `scalars` one-element
/// float32 tensors the fusion assumes hold these values.
struct PatternFusion {
  size_t chain = 0;
  KernelReplacement replacement;
  std::vector<size_t> idle;
  int32_t input = 0, out = 0;
  std::vector<std::pair<int32_t, size_t>> dropped;
  std::vector<std::pair<int32_t, double>> scalars;
};

/// torch's decomposed hardswish of a float32 value that no convolution
/// fusion took: add.out(input, three, 1), clamp.out(0, None),
/// clamp.out(None, 6), mul.out(input, clamped), div.out(six) -> out, the
/// five running one after the other (instructions between them marked in
/// `idle`), each intermediate result (not in `keep`) read by the next
/// alone, out of input's shape. The add becomes hardswish.out(input, out)
/// (`replacement`) and the other four run nothing (`idle`). The caller
/// checks that `scalars` hold 3 and 6, that no view reads the `dropped`
/// values' bytes, and that out overlaps input element for element or not
/// at all. None in methods with jumps or moves.
std::vector<PatternFusion> find_hardswish_fusions(const format::MethodDesc& d,
                                                  const std::vector<bool>& keep,
                                                  const std::vector<std::vector<bool>>& idle);

/// torch's decomposed attention's softmax, whose lines of nothing but -inf
/// give zeros:
///   _softmax.out(x, dim, false) -> s, eq.Scalar_out(x, -inf) -> e,
///   logical_not.out(e) -> n, any.out(n, dim, true) -> a,
///   logical_not.out(a) -> k, full_like.out(s, 0) -> z,
///   where.self_out(k, z, s) -> out,
/// the seven running one after the other (instructions between them marked
/// in `idle`), s, e, n, a, k, z (not in `keep`) read by these alone, x
/// floating. The softmax becomes kSafeSoftmaxKernel(x, dim, false, out)
/// (`replacement`) and the other six run nothing. The caller checks that
/// no view reads the `dropped` values' bytes and that out overlaps x
/// element for element or not at all. None in methods with jumps or moves.
std::vector<PatternFusion> find_safe_softmax_fusions(const format::MethodDesc& d,
                                                     const std::vector<bool>& keep,
                                                     const std::vector<std::vector<bool>>& idle);

/// torch's decomposed scaled-dot-product attention, as torch.export writes
/// F.scaled_dot_product_attention out (and attention written by hand):
///   bmm.out(A, B) -> scores; multiplications or divisions of the scores
///   by a number (mul.Scalar_out, div.Scalar_out, or mul.out / div.out by
///   a one-element float32 constant); at most one add.out(scores, mask,
///   alpha 1) in either order of its operands, with no number after it;
///   _softmax.out(., last dim, false), or the safe softmax of
///   find_safe_softmax_fusions; expand_copy.out to its own shape, if any;
///   bmm.out(probabilities, V) -> O; then layout copies of O
///   (permute_copy.out, clone.out, _clone_dim_order.out to the default
///   order), each read by the next alone, to F,
/// every tensor between the two products holding rows [..., S, Sk], and
/// where A [B * H, S, D], B [B * H, D, Sk] and V [B * H, Sk, D] are views
/// of [B, H, ...] tensors reached, through layout copies (permute_copy.out,
/// expand_copy.out to the same shape, clone.out, _clone_dim_order.out) and,
/// for A and B alone, numbers, from tensors q, kt and v of four
/// dimensions in the default dim order, such that q seen as [B, S, H, D],
/// k as [B, Sk, H, D] and v as [B, Sk, H, D] keep head_dim innermost (`q`,
/// `k`, `v`: views of those values' bytes). The mask is [..., S, Sk] with
/// ones before, float32 or the queries' dtype; Sk >= S; float32, float16
/// or bfloat16, head_dim at most 256 (what CUDA's kernel takes).
/// F (or O, read as [B, H, S, D]) is written as the view `out`
/// ([B, S, H, D]). Every value the run writes but F (`dropped`) is read by
/// the run alone, views included, and not in `keep`; a view of a kept
/// value other than an input or an output must be `whole` (the value
/// itself). Nothing outside the run writes over what the kernel reads from
/// planned memory (`reads`; results, and operands of instructions that
/// write theirs, desc::writes_operands) between the run's instruction that
/// read it and `at`, the last, which runs kAttentionKernel with the
/// product of the numbers as the scale (`empty_rows_zero` for the safe
/// softmax); the others (`idle`) run nothing. The caller checks that F does
/// not overlap what the kernel reads (else F gets memory of its own) and
/// that each instruction still runs its own operator. None in methods with
/// jumps or moves.
/// Where q, k and v are the three items of one split_with_sizes_copy.out
/// of a tensor X along its last dim (a packed projection [..., 3 H D] cut
/// into thirds, as GPT-2-style blocks write it), each item read by the run
/// alone, the views read X in place (`strides`, `offset`) and the split
/// joins the run: its three copies go.
struct AttentionFusion {
  /// value's bytes seen with `sizes` and `dim_order`; or, where `strides`
  /// is not empty, the elements at `offset` + sum of index * stride (a
  /// window of a packed projection: see below).
  struct View {
    int32_t value = -1;
    std::vector<int64_t> sizes;
    std::vector<uint8_t> dim_order;
    bool whole = true;
    std::vector<int64_t> strides;
    int64_t offset = 0;
  };
  size_t chain = 0;
  size_t at = 0;
  std::vector<size_t> idle;
  View q, k, v, out;
  std::optional<View> mask;
  double scale = 1;
  bool empty_rows_zero = false;
  std::vector<int32_t> dropped;
  std::vector<std::pair<int32_t, size_t>> reads;  // planned values read, each with its reader
};
std::vector<AttentionFusion> find_attention_fusions(const format::MethodDesc& d,
                                                    const std::vector<bool>& keep,
                                                    const std::vector<std::vector<bool>>& idle);

/// torch's rotate-half rotary embedding (LLaMA as Hugging Face writes it):
///   mul.out(x, cos) -> a; slice_copy.Tensor_out(x, -1, h, end >= 2h) -> s1;
///   neg.out(s1) -> n; slice_copy.Tensor_out(x, -1, 0 or None, h) -> s2;
///   cat.out((n, s2), -1) -> c; mul.out(c, sin) -> b; add.out(a, b, 1) -> out
/// (products and the sum in either order of operands), the seven running
/// one after the other in any order ending with the add, each intermediate
/// (not in `keep`) read by the next alone, x, cos, sin and out of one dtype
/// (float32, float16, bfloat16), x and out static and of one shape whose
/// last dim is 2h. The add becomes kRotaryHalfKernel(x, cos, sin, out) and
/// the other six run nothing. The caller checks that out overlaps none of
/// x, cos and sin, and that no view reads the dropped values' bytes. None
/// in methods with jumps or moves.
std::vector<PatternFusion> find_rotary_fusions(const format::MethodDesc& d,
                                               const std::vector<bool>& keep,
                                               const std::vector<std::vector<bool>>& idle);

/// torch's decomposed RMSNorm over the last dim, in dtype S (float32,
/// float16, bfloat16):
///   [_to_copy / _to_dim_order_copy(h) -> x, h half precision, S float32;]
///   pow.Tensor_Scalar_out(x, 2) or mul.out(x, x) -> sq;
///   mean.out(sq, [-1], keepdim, None) -> m; add.out(m, eps, 1) -> a (eps
///   one element of S, either operand); rsqrt.out(a) -> r;
///   mul.out(x, r) -> y (either order);
///   [a cast of y to float16 / bfloat16 (S float32) -> y;]
///   [mul.out(y, w) -> y, w [n] of y's dtype (either order)]
/// the steps running one after the other, each intermediate (not in
/// `keep`) read by the next step alone (the widened x by the square and
/// the product alone), the result of x's shape in default dim order. The
/// last step becomes kRmsNormKernel(h or x, eps, w or None, out) and the
/// others run nothing. The caller checks that no view reads the dropped
/// values' bytes and that out overlaps the input element for element (of
/// one size) or not at all, and eps and w not at all. None in methods with
/// jumps or moves.
std::vector<PatternFusion> find_rms_norm_fusions(const format::MethodDesc& d,
                                                 const std::vector<bool>& keep,
                                                 const std::vector<std::vector<bool>>& idle);

/// A product and the residual add after it:
///   addmm.out(bias, mat1, mat2, beta 1, alpha 1) -> product (bias [n]), or
///   mm.out(mat1, mat2) -> product;
///   then, as the next instruction that runs, add.out(read, other, alpha 1)
///   -> out (operands in either order),
/// where `read` is the product, or a view the exporter resolved by planning
/// (a tensor over exactly the product's bytes that no instruction writes),
/// that the add alone reads; the product (not in `keep`) is read by nothing
/// else; every tensor float32, float16 or bfloat16 of one dtype, static and
/// in default dim order, product [m, n] and read, other and out of one
/// shape whose last dim is n. The add runs kGemmAddKernel(mat1, mat2, bias
/// or None, other, out) and the product nothing. The caller checks that no
/// other view reads the product's bytes and that out overlaps other
/// element for element or not at all, and none of mat1, mat2 and the bias.
/// None in methods with jumps or moves.
struct GemmAddFusion {
  size_t chain = 0;
  size_t gemm = 0, add = 0;
  int32_t mat1 = -1, mat2 = -1, bias = -1, other = -1, out = -1;
  int32_t product = -1, read = -1;
};
std::vector<GemmAddFusion> find_gemm_add_fusions(const format::MethodDesc& d,
                                                 const std::vector<bool>& keep,
                                                 const std::vector<std::vector<bool>>& idle);

/// A quantized linear layer (kQuantizedLinearKernel) with the steps that
/// make and consume its int8 activations around it:
///   quantize_per_tensor.out(x, s, z, -128, 127, int8) -> q, running just
///   before the layer, whose input q is, with input parameters (s, z);
///   and/or dequantize_per_tensor.out(y8, s', z', -128, 127, int8, None or
///   float32) -> y, running just after it, whose out y8 is, with out
///   parameters (s', z');
/// q and y8 int8, read by these alone and not in `keep`, x and y float32.
/// The layer becomes kQuantizedLinearFloatKernel reading x and/or writing
/// y (`replacement`), and the quantize and dequantize run nothing: the
/// same values (ops/quant.h, QLinearArgs). Likewise
///   quantize_per_tensor.out(x, s, z, -128, 127, int8) -> q,
///   xnnpack::static_transpose(q, [0, 2, 3, 1]) -> t,
///   xnnpack::quantized_conv2d(t, s, z, ...)
/// one after the other, q and t int8, read by the next alone and not in
/// `keep`, x float32 [N, C, H, W] in default dim order: the convolution
/// becomes kQuantizedConv2dFloatKernel reading x, the other two nothing. The caller checks that the
/// device's layer takes float32, that no view reads the `dropped` values'
/// bytes, and the overlap of input and out. None in methods with jumps or
/// moves.
std::vector<PatternFusion> find_quant_io_fusions(const format::MethodDesc& d,
                                                 const std::vector<bool>& keep,
                                                 const std::vector<std::vector<bool>>& idle);

/// A KV cache that the plain -kv export writes back whole on every step,
///   index_put.out(cache, indices, values, accumulate, *, out=result)
///   ... readers of result ...
///   copy_(cache, result),
/// made a write in place: the index_put becomes index_put_(cache, indices,
/// values, accumulate), `result` becomes the cache itself (its memory is the
/// cache's) and the copy_ runs nothing. Found where that gives the same
/// values to everything that reads them: the cache (a tensor no other
/// tensor overlaps) is mentioned by no instruction between the two nor
/// after the copy_; `result` (not in `keep`) is written by the index_put
/// alone and has the cache's dtype, static shape and dim order; methods
/// with jumps or moves are left alone.
struct InPlaceCacheWrite {
  KernelReplacement index_put;  // now aten::index_put_
  size_t copy_chain = 0;
  size_t copy_index = 0;
  int32_t cache = 0;
  int32_t result = 0;
};
std::vector<InPlaceCacheWrite> find_in_place_cache_writes(const format::MethodDesc& d,
                                                          const std::vector<bool>& keep);

/// Positions on the device. A decode step reads its position with
/// _local_scalar_dense(t) -> p (t: a one-element integer tensor that an
/// instruction computed, from input_pos) and passes the number p, and
/// p + n, to the kernels that place tokens. On a GPU that read is a host
/// wait in the middle of the step, and it keeps the step from being
/// replayed as a CUDA graph. Where every reader of p (and of each
/// executorch_prim::add.Scalar(p, n)) is one of
///   llama::update_cache.out(value, cache, p, out)  -> kUpdateCacheAtKernel(value, cache, t, out)
///   llama::custom_sdpa.out(q, k, v, p, None, dropout, causal, scale, out)
///                                                   -> kCustomSdpaAtKernel(q, k, v, t, causal,
///                                                   scale, out)
///   slice_copy.Tensor_out(x, dim, p, p + n, 1, out) -> kSliceAtKernel(x, dim, t, n, out)
///   scalar_tensor.out(p, out)                       -> kItemCopyKernel(t, out),
/// those instructions are replaced, and the _local_scalar_dense and the
/// add.Scalar run nothing (`idle`). Each such t is read later than its own
/// lifetime in the memory plan, so it needs memory of its own
/// (`positions`). Values in `keep` are never dropped; methods with jumps or
/// moves are left alone.
struct PositionRewrites {
  std::vector<KernelReplacement> replace;
  std::vector<std::pair<size_t, size_t>> idle;  // (chain, index)
  std::vector<int32_t> positions;
};
PositionRewrites find_position_rewrites(const format::MethodDesc& d, const std::vector<bool>& keep);

}  // namespace pterun
