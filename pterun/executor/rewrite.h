#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
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

/// Two instructions of one chain that may run as one kernel: `first` runs
/// nothing and `second` runs `kernel` (kernels/internal_ops.h) with `args`
/// (value indices), which gives what `second` gave; `dropped` is the value
/// `first` wrote, which nothing reads any more.
struct KernelFusion {
  size_t chain = 0;
  size_t first = 0;
  size_t second = 0;
  const char* kernel = nullptr;
  std::array<int32_t, 5> args{};
  int32_t dropped = 0;
};

/// mul.out(x, m) -> t followed by add.out(t, a, alpha) -> out (or sub.out)
/// where only that add reads t, t is not in `keep`, x, m, t, a and out share
/// one floating dtype, and every instruction between the two is marked in
/// `idle` (it runs nothing: folded at load); none in methods with jumps or
/// moves. Gives kMulAddKernel /
/// kMulSubKernel fusions with args (x, m, a, alpha, out). The caller still
/// checks memory: that nothing reads t's bytes through a view and that out
/// does not partly overlap x, m or a.
std::vector<KernelFusion> find_mul_add_fusions(const format::MethodDesc& d,
                                               const std::vector<bool>& keep,
                                               const std::vector<std::vector<bool>>& idle);

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
struct HardswishFusion {
  size_t chain = 0;
  KernelReplacement replacement;
  std::vector<size_t> idle;
  int32_t input = 0, out = 0;
  std::vector<std::pair<int32_t, size_t>> dropped;  // values nothing reads now, and their writer
  std::vector<std::pair<int32_t, double>> scalars;
};
std::vector<HardswishFusion> find_hardswish_fusions(const format::MethodDesc& d,
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
