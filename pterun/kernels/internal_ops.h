#pragma once

namespace pterun::kernels {

/// Names of kernels that no program names: the executor calls them in
/// place of a program's operator where it can tell at load that less work
/// gives the same results (executor/rewrite.h). A backend registers those
/// it has; rewrites needing a missing one are skipped.

/// max_pool2d_with_indices.out's arguments; out is written, the indices
/// tensor may be left as it was (ops/pool.h, PoolBackend::max_pool_values).
inline constexpr const char* kMaxPoolValuesKernel = "pterun::max_pool2d_values.out";

/// A chain of elementwise operators as one kernel (ops/fused.h):
/// (Tensor[] inputs, float[] program, *, out) -> out.
inline constexpr const char* kFusedElementwiseKernel = "pterun::fused_elementwise.out";

/// _softmax.out whose lines of nothing but -inf give zeros: torch's
/// decomposed attention's softmax, eq(-inf), logical_not, any,
/// logical_not, full_like(0) and where as one kernel (executor/rewrite.h):
/// (self, dim, half_to_float, *, out) -> out.
inline constexpr const char* kSafeSoftmaxKernel = "pterun::safe_softmax.out";

/// The integer kernels that replace dequantize -> op -> quantize chains
/// (executor/quant_fusion.h; signatures in ops/quant.h).
inline constexpr const char* kQuantizedWeightSumsKernel = "pterun::quantized_weight_sums.out";
inline constexpr const char* kQuantizedLinearKernel = "pterun::quantized_linear.out";
inline constexpr const char* kQuantizedConv2dKernel = "pterun::quantized_conv2d.out";
inline constexpr const char* kQuantizedMeanKernel = "pterun::quantized_mean.out";
/// quantized_linear.out whose input is float32 (quantized first, as
/// quantize_per_tensor.out to int8 does) and/or whose output is float32
/// (dequantized after, as dequantize_per_tensor.out does): the quantize
/// and dequantize steps around it folded in (executor/rewrite.h,
/// find_quant_io_fusions).
inline constexpr const char* kQuantizedLinearFloatKernel = "pterun::quantized_linear_float.out";
/// xnnpack::quantized_conv2d of a float32 NCHW input, quantized to int8
/// and read as NHWC: the quantize before an XNNPACK int8 graph's first
/// convolution and the transpose to NHWC between them folded into it
/// (executor/rewrite.h, find_quant_io_fusions; signature in ops/xnnpack.h).
inline constexpr const char* kQuantizedConv2dFloatKernel = "xnnpack::quantized_conv2d_float";

/// convolution.out followed by relu.out / hardtanh.out / hardswish (as
/// torch decomposes it: add, clamp, clamp, mul, div) of its result, in one
/// pass: convolution.out's arguments (then hardtanh's min_val and
/// max_val), *, out. The load-time fusion (executor/rewrite.h) also folds a
/// batch norm in between into the weights and bias it passes.
inline constexpr const char* kConvReluKernel = "pterun::convolution_relu.out";
inline constexpr const char* kConvHardtanhKernel = "pterun::convolution_hardtanh.out";
inline constexpr const char* kConvHardswishKernel = "pterun::convolution_hardswish.out";
/// convolution.out then add.out of a residual (alpha 1; then relu.out of
/// the sum): convolution.out's arguments, the residual, *, out.
inline constexpr const char* kConvAddKernel = "pterun::convolution_add.out";
inline constexpr const char* kConvAddReluKernel = "pterun::convolution_add_relu.out";

/// Positions on the device (executor/rewrite.h, find_position_rewrites): a
/// decode step's start_pos read by the kernels that use it from the tensor
/// _local_scalar_dense read it from, so that the host never waits for it.
/// (value, cache, start_pos tensor, *, out): llama::update_cache.out.
inline constexpr const char* kUpdateCacheAtKernel = "pterun::update_cache_at.out";
/// (q, k, v, start_pos tensor, is_causal, scale, *, out): llama::custom_sdpa.out without a mask.
inline constexpr const char* kCustomSdpaAtKernel = "pterun::custom_sdpa_at.out";
/// (self, dim, start tensor, length, *, out): slice_copy.Tensor_out(self, dim, start,
/// start + length, 1) for a slice that fits.
inline constexpr const char* kSliceAtKernel = "pterun::slice_at.out";
/// (src, *, out): out (0-D) = src's one element converted to out's dtype:
/// scalar_tensor.out of the number that _local_scalar_dense read from src.
inline constexpr const char* kItemCopyKernel = "pterun::item_copy.out";

/// torch's rotate-half rotary embedding, x * cos + cat(-x[..., h:],
/// x[..., :h]) * sin, as one pass (ops/elementwise.h, RotaryArgs):
/// (x, cos, sin, *, out).
inline constexpr const char* kRotaryHalfKernel = "pterun::rotary_half.out";

/// torch's decomposed RMSNorm, x * rsqrt(mean(x * x, -1) + eps) [* weight],
/// as one pass over each row (ops/norm.h, RmsNormArgs): (x, eps, weight or
/// None, *, out).
inline constexpr const char* kRmsNormKernel = "pterun::rms_norm.out";

/// addmm.out (beta and alpha 1, a bias row) or mm.out, then add.out of its
/// result and a residual (alpha 1), as one product whose epilogue adds
/// both (ops/matmul.h, gemm_add_out): (mat1, mat2, bias or None, other, *,
/// out).
inline constexpr const char* kGemmAddKernel = "pterun::gemm_add.out";

/// torch's decomposed attention (bmm, scale, additive mask, softmax or
/// safe softmax, bmm) as one kernel (ops/attention.h, attention_out):
/// (q [B, S, H, D], k, v [B, Sk, H_kv, D], mask [S, Sk] or None, scale,
/// empty_rows_zero, *, out): every query attends over all Sk >= S keys; a
/// row masked entirely gives zeros when empty_rows_zero, else NaN.
inline constexpr const char* kAttentionKernel = "pterun::attention.out";

}  // namespace pterun::kernels
