#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "pterun/format/program_desc.h"

namespace pterun {

/// One argument of a fused quantized kernel: a value of the method, or one
/// the loader makes.
struct FusedArg {
  enum class Kind : uint8_t {
    Value,               // the method's value `value`
    Int,                 // a new Int value `int_value`
    WeightSums,          // int32 [N]: the sums of int8 weight `value`'s rows (made once at load)
    WeightChannelsLast,  // int8 weight `value` copied channels-last (made once at load)
    Scale,               // a float32 [1] constant tensor holding `scale`
  };
  Kind kind = Kind::Value;
  int32_t value = -1;
  int64_t int_value = 0;
  double scale = 0;
};

/// A dequantize -> op [-> activation] -> quantize chain of a PT2E program
/// that one integer kernel computes: instruction `at` (the quantize) runs
/// `kernel` with `args`; the instructions in `idle` run nothing.
struct QuantFusion {
  size_t chain = 0;
  size_t at = 0;
  std::vector<size_t> idle;
  const char* kernel = nullptr;
  std::vector<FusedArg> args;
  /// Quantized activations the kernel reads at `at`, each with the
  /// instruction that read it before (its dequantize): nothing may write
  /// over them in between, and the output must not overlap them.
  std::vector<std::pair<int32_t, size_t>> reads;
  /// Values nothing writes any more (the float intermediates): no view may
  /// read their memory later.
  std::vector<int32_t> dropped;
  /// The value written at `at` (the quantize's out).
  int32_t out = -1;
  /// A second value the kernel writes at `at`, which nothing reads (max
  /// pooling's indices): it needs memory of its own, or a kernel that
  /// does not write it.
  int32_t scratch_out = -1;
};

/// The chains of a method that integer kernels can compute
/// (docs/quantization.md, "Integer compute"): static PT2E int8 with
/// per-tensor activations and per-channel (or per-tensor) symmetric int8
/// weights, for
///   - linear.out, addmm.out (bias, beta = alpha = 1) and mm.out with the
///     weight transposed by permute_copy or t_copy -> quantized_linear;
///   - convolution.out (2-D, not transposed) -> quantized_conv2d;
///   - add.out (alpha = 1, same shapes) -> quantized_decomposed::add.out;
///   - mean.out (keepdim, dims adjacent in memory) -> quantized_mean;
///   - max_pool2d_with_indices.out with equal parameters on both sides ->
///     max_pool2d_with_indices.out on the integers;
/// each optionally followed by relu, hardtanh or clamp, folded into the
/// output clamp (exact: quantizing is monotone). Every float intermediate
/// must be read once, by the chain, and not be in `keep`; none in methods
/// with jumps or moves. The caller checks memory and kernels.
std::vector<QuantFusion> find_quant_fusions(const format::MethodDesc& d,
                                            const std::vector<bool>& keep);

}  // namespace pterun
