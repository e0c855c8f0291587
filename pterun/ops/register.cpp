// Every operator pterun runs, once: its name, front-end, family and whether
// constant folding may run it at load. A backend registers the operators of
// the families it computes (register_ops). To add an operator, see
// docs/adding_an_operator.md.

#include "pterun/ops/register.h"

#include <iterator>

#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/attention.h"
#include "pterun/ops/conv.h"
#include "pterun/ops/copy.h"
#include "pterun/ops/creation.h"
#include "pterun/ops/elementwise.h"
#include "pterun/ops/fused.h"
#include "pterun/ops/index.h"
#include "pterun/ops/kv_cache.h"
#include "pterun/ops/matmul.h"
#include "pterun/ops/nonzero.h"
#include "pterun/ops/norm.h"
#include "pterun/ops/pool.h"
#include "pterun/ops/prim.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/reduce.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/softmax.h"
#include "pterun/ops/xnnpack.h"

namespace pterun::ops {
namespace {

using F = OpFamily;
constexpr Fold kFold = Fold::Yes;

bool has_fused_elementwise(const OpBackend& b) {
  return b.elementwise->fused != nullptr;
}

bool has_conv_fused(const OpBackend& b) {
  return b.conv->convolution_fused != nullptr;
}

bool has_gemm_add(const OpBackend& b) {
  return b.matmul->adds;
}

bool has_dynamic_linear(const OpBackend& b) {
  return b.quant->dynamic_linear != nullptr;
}

bool has_float_io(const OpBackend& b) {
  return b.quant->float_io;
}

constexpr OpDef kOps[] = {
    // ---- prim: the interpreter's own operators ---------------------------------
    def<&sym_size>("aten::sym_size.int", F::Prim),
    def<&sym_numel>("aten::sym_numel", F::Prim),
    def<&local_scalar_dense>("aten::_local_scalar_dense", F::Prim),
    def<&et_view>("executorch_prim::et_view.default", F::Prim),
    def<&scalar_binary<BinOp::Add>>("executorch_prim::add.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Sub>>("executorch_prim::sub.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Mul>>("executorch_prim::mul.Scalar", F::Prim),
    def<&scalar_binary<BinOp::FloorDiv>>("executorch_prim::floordiv.Scalar", F::Prim),
    def<&scalar_binary<BinOp::FloorDiv>>("executorch_prim::floordiv.int", F::Prim),
    def<&scalar_binary<BinOp::TrueDiv>>("executorch_prim::truediv.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Mod>>("executorch_prim::mod.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Mod>>("executorch_prim::mod.int", F::Prim),
    def<&scalar_binary<BinOp::Eq>>("executorch_prim::eq.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Gt>>("executorch_prim::gt.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Lt>>("executorch_prim::lt.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Ge>>("executorch_prim::ge.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Le>>("executorch_prim::le.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Max>>("executorch_prim::sym_max.Scalar", F::Prim),
    def<&scalar_binary<BinOp::Min>>("executorch_prim::sym_min.Scalar", F::Prim),
    def<&scalar_unary<UnOp::Neg>>("executorch_prim::neg.Scalar", F::Prim),
    def<&scalar_unary<UnOp::Ceil>>("executorch_prim::ceil.Scalar", F::Prim),
    def<&scalar_unary<UnOp::Round>>("executorch_prim::round.Scalar", F::Prim),
    def<&scalar_unary<UnOp::Trunc>>("executorch_prim::trunc.Scalar", F::Prim),
    def<&scalar_unary<UnOp::ToFloat>>("executorch_prim::sym_float.Scalar", F::Prim),
    def<&scalar_unary<UnOp::ToInt>>("executorch_prim::sym_int.Scalar", F::Prim),
    def<&scalar_unary<UnOp::Not>>("executorch_prim::sym_not.Scalar", F::Prim),
    def<&sym_ite>("executorch_prim::sym_ite.Scalar", F::Prim),

    // ---- shape: views, concatenation, rearrangement ---------------------------
    def<&view_copy_out>("aten::view_copy.out", F::Shape, kFold),
    def<&permute_copy_out>("aten::permute_copy.out", F::Shape, kFold),
    def<&expand_copy_out>("aten::expand_copy.out", F::Shape, kFold),
    def<&unsqueeze_copy_out>("aten::unsqueeze_copy.out", F::Shape, kFold),
    def<&squeeze_copy_dim_out>("aten::squeeze_copy.dim_out", F::Shape, kFold),
    def<&squeeze_copy_dims_out>("aten::squeeze_copy.dims_out", F::Shape, kFold),
    def<&squeeze_copy_out>("aten::squeeze_copy.out", F::Shape, kFold),
    def<&slice_copy_out>("aten::slice_copy.Tensor_out", F::Shape, kFold),
    def<&select_copy_out>("aten::select_copy.int_out", F::Shape, kFold),
    def<&narrow_copy_out>("aten::narrow_copy.out", F::Shape),
    def<&transpose_copy_out>("aten::transpose_copy.int_out", F::Shape, kFold),
    def<&t_copy_out>("aten::t_copy.out", F::Shape, kFold),
    def<&as_strided_copy_out>("aten::as_strided_copy.out", F::Shape),
    def<&alias_copy_out>("aten::alias_copy.out", F::Shape, kFold),
    def<&detach_copy_out>("aten::detach_copy.out", F::Shape),
    def<&unfold_copy_out>("aten::unfold_copy.out", F::Shape),
    def<&diagonal_copy_out>("aten::diagonal_copy.out", F::Shape),
    def<&cat_out>("aten::cat.out", F::Shape),
    def<&stack_out>("aten::stack.out", F::Shape),
    def<&split_with_sizes_copy_out>("aten::split_with_sizes_copy.out", F::Shape),
    def<&split_copy_out>("aten::split_copy.Tensor_out", F::Shape),
    def<&unbind_copy_out>("aten::unbind_copy.int_out", F::Shape),
    def<&repeat_out>("aten::repeat.out", F::Shape),
    def<&flip_out>("aten::flip.out", F::Shape),
    def<&roll_out>("aten::roll.out", F::Shape),
    def<&tril_out>("aten::tril.out", F::Shape, kFold),
    def<&triu_out>("aten::triu.out", F::Shape, kFold),
    def<&constant_pad_nd_out>("aten::constant_pad_nd.out", F::Shape),
    def<&pixel_shuffle_out>("aten::pixel_shuffle.out", F::Shape),
    def<&pixel_unshuffle_out>("aten::pixel_unshuffle.out", F::Shape),
    def<&slice_scatter_out>("aten::slice_scatter.out", F::Shape),
    def<&select_scatter_out>("aten::select_scatter.out", F::Shape),
    def<&et_copy_index>("executorch_prim::et_copy_index.tensor", F::Shape),
    def<&update_cache_out>("llama::update_cache.out", F::Shape),

    // ---- softmax ----------------------------------------------------------------
    def<&softmax_out>("aten::_softmax.out", F::Softmax),
    def<&log_softmax_out>("aten::_log_softmax.out", F::Softmax),
    def<&safe_softmax_out>(kernels::kSafeSoftmaxKernel, F::Softmax),

    // ---- norm -------------------------------------------------------------------
    def<&native_layer_norm_out>("aten::native_layer_norm.out", F::Norm),
    def<&batch_norm_no_training_out>("aten::_native_batch_norm_legit_no_training.out", F::Norm),
    def<&native_group_norm_out>("aten::native_group_norm.out", F::Norm),
    def<&rms_norm_out>(kernels::kRmsNormKernel, F::Norm),

    // ---- elementwise: binary arithmetic ---------------------------------------
    def<&add_out>("aten::add.out", F::Elementwise, kFold),
    def<&sub_out>("aten::sub.out", F::Elementwise, kFold),
    def<&mul_out>("aten::mul.out", F::Elementwise, kFold),
    def<&add_scalar_out>("aten::add.Scalar_out", F::Elementwise, kFold),
    def<&sub_scalar_out>("aten::sub.Scalar_out", F::Elementwise, kFold),
    def<&rsub_scalar_out>("aten::rsub.Scalar_out", F::Elementwise),
    def<&mul_scalar_out>("aten::mul.Scalar_out", F::Elementwise, kFold),
    def<&div_out>("aten::div.out", F::Elementwise, kFold),
    def<&div_mode_out>("aten::div.out_mode", F::Elementwise),
    def<&div_scalar_out>("aten::div.Scalar_out", F::Elementwise, kFold),
    def<&div_scalar_mode_out>("aten::div.Scalar_mode_out", F::Elementwise),
    def<&floor_divide_out>("aten::floor_divide.out", F::Elementwise),
    def<&remainder_tensor_out>("aten::remainder.Tensor_out", F::Elementwise),
    def<&remainder_scalar_out>("aten::remainder.Scalar_out", F::Elementwise),
    def<&fmod_tensor_out>("aten::fmod.Tensor_out", F::Elementwise),
    def<&fmod_scalar_out>("aten::fmod.Scalar_out", F::Elementwise),
    def<&pow_tensor_scalar_out>("aten::pow.Tensor_Scalar_out", F::Elementwise, kFold),
    def<&pow_tensor_tensor_out>("aten::pow.Tensor_Tensor_out", F::Elementwise),
    def<&pow_scalar_out>("aten::pow.Scalar_out", F::Elementwise),
    def<&maximum_out>("aten::maximum.out", F::Elementwise),
    def<&minimum_out>("aten::minimum.out", F::Elementwise),
    def<&atan2_out>("aten::atan2.out", F::Elementwise),
    def<&bitwise_tensor_out<BinaryFn::BitwiseAnd>>("aten::bitwise_and.Tensor_out", F::Elementwise),
    def<&bitwise_tensor_out<BinaryFn::BitwiseOr>>("aten::bitwise_or.Tensor_out", F::Elementwise),
    def<&bitwise_tensor_out<BinaryFn::BitwiseXor>>("aten::bitwise_xor.Tensor_out", F::Elementwise),
    def<&bitwise_scalar_out<ScalarFn::BitwiseAnd>>("aten::bitwise_and.Scalar_out", F::Elementwise),
    def<&bitwise_scalar_out<ScalarFn::BitwiseOr>>("aten::bitwise_or.Scalar_out", F::Elementwise),
    def<&bitwise_scalar_out<ScalarFn::BitwiseXor>>("aten::bitwise_xor.Scalar_out", F::Elementwise),
    only_where(def<&fused_elementwise_out>(kernels::kFusedElementwiseKernel, F::Elementwise),
               &has_fused_elementwise),

    // ---- elementwise: unary -----------------------------------------------------
    def<&unary_out<UnaryFn::Exp>>("aten::exp.out", F::Elementwise, kFold),
    def<&unary_out<UnaryFn::Expm1>>("aten::expm1.out", F::Elementwise),
    def<&unary_out<UnaryFn::Log>>("aten::log.out", F::Elementwise),
    def<&unary_out<UnaryFn::Log1p>>("aten::log1p.out", F::Elementwise),
    def<&unary_out<UnaryFn::Log2>>("aten::log2.out", F::Elementwise),
    def<&unary_out<UnaryFn::Log10>>("aten::log10.out", F::Elementwise),
    def<&unary_out<UnaryFn::Sqrt>>("aten::sqrt.out", F::Elementwise, kFold),
    def<&unary_out<UnaryFn::Rsqrt>>("aten::rsqrt.out", F::Elementwise, kFold),
    def<&unary_out<UnaryFn::Reciprocal>>("aten::reciprocal.out", F::Elementwise, kFold),
    def<&unary_out<UnaryFn::Sin>>("aten::sin.out", F::Elementwise, kFold),
    def<&unary_out<UnaryFn::Cos>>("aten::cos.out", F::Elementwise, kFold),
    def<&unary_out<UnaryFn::Tan>>("aten::tan.out", F::Elementwise),
    def<&unary_out<UnaryFn::Asin>>("aten::asin.out", F::Elementwise),
    def<&unary_out<UnaryFn::Acos>>("aten::acos.out", F::Elementwise),
    def<&unary_out<UnaryFn::Atan>>("aten::atan.out", F::Elementwise),
    def<&unary_out<UnaryFn::Sinh>>("aten::sinh.out", F::Elementwise),
    def<&unary_out<UnaryFn::Cosh>>("aten::cosh.out", F::Elementwise),
    def<&unary_out<UnaryFn::Tanh>>("aten::tanh.out", F::Elementwise),
    def<&unary_out<UnaryFn::Asinh>>("aten::asinh.out", F::Elementwise),
    def<&unary_out<UnaryFn::Acosh>>("aten::acosh.out", F::Elementwise),
    def<&unary_out<UnaryFn::Atanh>>("aten::atanh.out", F::Elementwise),
    def<&unary_out<UnaryFn::Erf>>("aten::erf.out", F::Elementwise),
    def<&unary_out<UnaryFn::Sigmoid>>("aten::sigmoid.out", F::Elementwise),
    def<&unary_out<UnaryFn::Neg>>("aten::neg.out", F::Elementwise, kFold),
    def<&unary_out<UnaryFn::Abs>>("aten::abs.out", F::Elementwise),
    def<&unary_out<UnaryFn::Floor>>("aten::floor.out", F::Elementwise),
    def<&unary_out<UnaryFn::Ceil>>("aten::ceil.out", F::Elementwise),
    def<&unary_out<UnaryFn::Round>>("aten::round.out", F::Elementwise),
    def<&unary_out<UnaryFn::Trunc>>("aten::trunc.out", F::Elementwise),
    def<&unary_out<UnaryFn::Sign>>("aten::sign.out", F::Elementwise),
    def<&unary_out<UnaryFn::BitwiseNot>>("aten::bitwise_not.out", F::Elementwise),
    def<&unary_out<UnaryFn::IsNan>>("aten::isnan.out", F::Elementwise),
    def<&unary_out<UnaryFn::IsInf>>("aten::isinf.out", F::Elementwise),
    def<&logit_out>("aten::logit.out", F::Elementwise),

    // ---- elementwise: compare, logical, where -----------------------------------
    def<&compare_tensor_out<CompareFn::Eq>>("aten::eq.Tensor_out", F::Elementwise, kFold),
    def<&compare_tensor_out<CompareFn::Ne>>("aten::ne.Tensor_out", F::Elementwise, kFold),
    def<&compare_tensor_out<CompareFn::Lt>>("aten::lt.Tensor_out", F::Elementwise, kFold),
    def<&compare_tensor_out<CompareFn::Le>>("aten::le.Tensor_out", F::Elementwise, kFold),
    def<&compare_tensor_out<CompareFn::Gt>>("aten::gt.Tensor_out", F::Elementwise, kFold),
    def<&compare_tensor_out<CompareFn::Ge>>("aten::ge.Tensor_out", F::Elementwise, kFold),
    def<&compare_scalar_out<CompareFn::Eq>>("aten::eq.Scalar_out", F::Elementwise, kFold),
    def<&compare_scalar_out<CompareFn::Ne>>("aten::ne.Scalar_out", F::Elementwise, kFold),
    def<&compare_scalar_out<CompareFn::Lt>>("aten::lt.Scalar_out", F::Elementwise, kFold),
    def<&compare_scalar_out<CompareFn::Le>>("aten::le.Scalar_out", F::Elementwise, kFold),
    def<&compare_scalar_out<CompareFn::Gt>>("aten::gt.Scalar_out", F::Elementwise, kFold),
    def<&compare_scalar_out<CompareFn::Ge>>("aten::ge.Scalar_out", F::Elementwise, kFold),
    def<&logical_not_out>("aten::logical_not.out", F::Elementwise, kFold),
    def<&logical_binary_out<LogicalFn::And>>("aten::logical_and.out", F::Elementwise, kFold),
    def<&logical_binary_out<LogicalFn::Or>>("aten::logical_or.out", F::Elementwise, kFold),
    def<&logical_binary_out<LogicalFn::Xor>>("aten::logical_xor.out", F::Elementwise),
    def<&where_out>("aten::where.self_out", F::Elementwise, kFold),

    // ---- elementwise: activations -----------------------------------------------
    def<&relu_out>("aten::relu.out", F::Elementwise),
    def<&hardtanh_out>("aten::hardtanh.out", F::Elementwise),
    def<&clamp_out>("aten::clamp.out", F::Elementwise),
    def<&clamp_tensor_out>("aten::clamp.Tensor_out", F::Elementwise),
    def<&gelu_out>("aten::gelu.out", F::Elementwise),
    def<&leaky_relu_out>("aten::leaky_relu.out", F::Elementwise),
    def<&elu_out>("aten::elu.out", F::Elementwise),
    def<&softplus_out>("aten::softplus.out", F::Elementwise),
    def<&silu_out>("aten::silu.out", F::Elementwise),
    def<&hardsigmoid_out>("aten::hardsigmoid.out", F::Elementwise),
    def<&hardswish_out>("aten::hardswish.out", F::Elementwise),
    def<&glu_out>("aten::glu.out", F::Elementwise),
    def<&rotary_half_out>(kernels::kRotaryHalfKernel, F::Elementwise),
    // ---- reduce -----------------------------------------------------------------
    def<&sum_dim_out>("aten::sum.IntList_out", F::Reduce),
    def<&sum_out>("aten::sum.out", F::Reduce),
    def<&mean_dim_out>("aten::mean.out", F::Reduce),
    def<&mean_dtype_out>("aten::mean.dtype_out", F::Reduce),
    def<&prod_out>("aten::prod.out", F::Reduce),
    def<&prod_int_out>("aten::prod.int_out", F::Reduce),
    def<&any_all_dim_out<true>>("aten::any.out", F::Reduce, kFold),
    def<&any_all_dims_out<true>>("aten::any.dims_out", F::Reduce, kFold),
    def<&any_all_all_out<true>>("aten::any.all_out", F::Reduce, kFold),
    def<&any_all_dim_out<false>>("aten::all.out", F::Reduce, kFold),
    def<&any_all_dims_out<false>>("aten::all.dims_out", F::Reduce),
    def<&any_all_all_out<false>>("aten::all.all_out", F::Reduce, kFold),
    def<&amax_amin_out<true>>("aten::amax.out", F::Reduce),
    def<&amax_amin_out<false>>("aten::amin.out", F::Reduce),
    def<&max_min_unary_out<true>>("aten::max.unary_out", F::Reduce),
    def<&max_min_unary_out<false>>("aten::min.unary_out", F::Reduce),
    def<&argmax_argmin_out<true>>("aten::argmax.out", F::Reduce),
    def<&argmax_argmin_out<false>>("aten::argmin.out", F::Reduce),
    def<&max_min_dim_out<true>>("aten::max.dim_max", F::Reduce),
    def<&max_min_dim_out<false>>("aten::min.dim_min", F::Reduce),
    def<&var_correction_out>("aten::var.correction_out", F::Reduce),
    def<&var_out>("aten::var.out", F::Reduce),
    def<&var_mean_correction_out>("aten::var_mean.correction_out", F::Reduce),
    def<&cumsum_out>("aten::cumsum.out", F::Reduce),

    // ---- index ------------------------------------------------------------------
    def<&embedding_out>("aten::embedding.out", F::Index),
    def<&index_select_out>("aten::index_select.out", F::Index),
    def<&gather_out>("aten::gather.out", F::Index),
    def<&scatter_src_out>("aten::scatter.src_out", F::Index),
    def<&scatter_value_out>("aten::scatter.value_out", F::Index),
    def<&scatter_add_out>("aten::scatter_add.out", F::Index),
    def<&masked_fill_out>("aten::masked_fill.Scalar_out", F::Index),
    def<&index_tensor_out>("aten::index.Tensor_out", F::Index),
    def<&index_put_out>("aten::index_put.out", F::Index),
    def<&index_put_>("aten::index_put_", F::Index),
    def<&embedding_byte_out>("quantized_decomposed::embedding_byte.out", F::Index),
    def<&embedding_byte_dtype_out>("quantized_decomposed::embedding_byte.dtype_out", F::Index),
    def<&embedding_4bit_out>("quantized_decomposed::embedding_4bit.out", F::Index),
    def<&embedding_4bit_dtype_out>("quantized_decomposed::embedding_4bit.dtype_out", F::Index),
    def<&embedding_2bit_out>("quantized_decomposed::embedding_2bit.out", F::Index),
    def<&embedding_2bit_dtype_out>("quantized_decomposed::embedding_2bit.dtype_out", F::Index),

    // ---- attention: KV-cache and fused attention, cache writes at positions in tensors ----
    def<&custom_sdpa_out>("llama::custom_sdpa.out", F::Attention),
    def<&sdpa_with_kv_cache_out>("llama::sdpa_with_kv_cache.out", F::Attention),
    def<&update_cache_with_indices_out>("llama::update_cache_with_indices.out", F::Attention),
    def<&update_cache_at_out>(kernels::kUpdateCacheAtKernel, F::Attention),
    def<&custom_sdpa_at_out>(kernels::kCustomSdpaAtKernel, F::Attention),
    def<&slice_at_out>(kernels::kSliceAtKernel, F::Attention),
    def<&attention_out>(kernels::kAttentionKernel, F::Attention),

    // ---- nonzero ----------------------------------------------------------------
    def<&nonzero_out>("aten::nonzero.out", F::Nonzero),

    // ---- matmul -----------------------------------------------------------------
    def<&mm_out>("aten::mm.out", F::Matmul),
    def<&bmm_out>("aten::bmm.out", F::Matmul),
    def<&addmm_out>("aten::addmm.out", F::Matmul),
    def<&linear_out>("aten::linear.out", F::Matmul),
    only_where(def<&gemm_add_out>(kernels::kGemmAddKernel, F::Matmul), &has_gemm_add),

    // ---- conv -------------------------------------------------------------------
    def<&convolution_out>("aten::convolution.out", F::Conv),
    only_where(def<&convolution_relu_out>(kernels::kConvReluKernel, F::Conv), &has_conv_fused),
    only_where(def<&convolution_hardtanh_out>(kernels::kConvHardtanhKernel, F::Conv),
               &has_conv_fused),
    only_where(def<&convolution_hardswish_out>(kernels::kConvHardswishKernel, F::Conv),
               &has_conv_fused),
    only_where(def<&convolution_add_out>(kernels::kConvAddKernel, F::Conv), &has_conv_fused),
    only_where(def<&convolution_add_relu_out>(kernels::kConvAddReluKernel, F::Conv),
               &has_conv_fused),

    // ---- pool -------------------------------------------------------------------
    def<&max_pool2d_with_indices_out>("aten::max_pool2d_with_indices.out", F::Pool),
    def<&max_pool2d_values_out>(kernels::kMaxPoolValuesKernel, F::Pool),
    def<&avg_pool2d_out>("aten::avg_pool2d.out", F::Pool),
    def<&adaptive_avg_pool2d_out>("aten::_adaptive_avg_pool2d.out", F::Pool),
    def<&upsample_nearest2d_out>("aten::upsample_nearest2d.vec_out", F::Pool),
    def<&upsample_bilinear2d_out>("aten::upsample_bilinear2d.vec_out", F::Pool),

    // ---- copy: copies, clones and casts -----------------------------------------
    def<&copy_inplace>("aten::copy_", F::Copy),
    def<&copy_out>("aten::copy.out", F::Copy),
    def<&clone_out>("aten::clone.out", F::Copy, kFold),
    def<&clone_dim_order_out>("dim_order_ops::_clone_dim_order.out", F::Copy, kFold),
    def<&to_dim_order_copy_out>("dim_order_ops::_to_dim_order_copy.out", F::Copy, kFold),
    def<&to_copy_out>("aten::_to_copy.out", F::Copy, kFold),
    def<&empty_dim_order_out>("dim_order_ops::_empty_dim_order.out", F::Copy),
    def<&lift_fresh_copy_out>("aten::lift_fresh_copy.out", F::Copy),
    def<&item_copy_out>(kernels::kItemCopyKernel, F::Copy),

    // ---- creation: fills, empty, ranges -----------------------------------------
    def<&full_out>("aten::full.out", F::Creation, kFold),
    def<&full_like_out>("aten::full_like.out", F::Creation, kFold),
    def<&scalar_tensor_out>("aten::scalar_tensor.out", F::Creation, kFold),
    def<&zeros_out>("aten::zeros.out", F::Creation, kFold),
    def<&ones_out>("aten::ones.out", F::Creation, kFold),
    def<&zeros_like_out>("aten::zeros_like.out", F::Creation, kFold),
    def<&ones_like_out>("aten::ones_like.out", F::Creation, kFold),
    def<&empty_out>("aten::empty.out", F::Creation),
    def<&empty_like_out>("aten::empty_like.out", F::Creation),
    def<&fill_scalar_out>("aten::fill.Scalar_out", F::Creation),
    def<&fill_tensor_out>("aten::fill.Tensor_out", F::Creation),
    def<&arange_out>("aten::arange.out", F::Creation, kFold),
    def<&arange_start_out>("aten::arange.start_out", F::Creation, kFold),
    def<&linspace_out>("aten::linspace.out", F::Creation),

    // ---- quant: quantized_decomposed, and the loader's integer kernels ----------
    def<&quantize_per_tensor_out>("quantized_decomposed::quantize_per_tensor.out", F::Quant, kFold),
    def<&quantize_per_tensor_tensor_out>("quantized_decomposed::quantize_per_tensor.Tensor_out",
                                         F::Quant, kFold),
    def<&dequantize_per_tensor_out>("quantized_decomposed::dequantize_per_tensor.out", F::Quant,
                                    kFold),
    def<&dequantize_per_tensor_tensor_out>("quantized_decomposed::dequantize_per_tensor.Tensor_out",
                                           F::Quant, kFold),
    def<&quantize_per_channel_out>("quantized_decomposed::quantize_per_channel.out", F::Quant,
                                   kFold),
    def<&dequantize_per_channel_out>("quantized_decomposed::dequantize_per_channel.out", F::Quant,
                                     kFold),
    def<&quantize_per_token_out>("quantized_decomposed::quantize_per_token.out", F::Quant, kFold),
    def<&dequantize_per_token_out>("quantized_decomposed::dequantize_per_token.out", F::Quant,
                                   kFold),
    def<&quantize_per_channel_group_out>("quantized_decomposed::quantize_per_channel_group.out",
                                         F::Quant, kFold),
    def<&dequantize_per_channel_group_out>("quantized_decomposed::dequantize_per_channel_group.out",
                                           F::Quant, kFold),
    def<&choose_qparams_tensor_out>("quantized_decomposed::choose_qparams.Tensor_out", F::Quant),
    def<&choose_qparams_per_token_asymmetric_out>(
        "quantized_decomposed::choose_qparams_per_token_asymmetric.out", F::Quant),
    def<&quantized_add_out>("quantized_decomposed::add.out", F::Quant, kFold),
    def<&quantized_weight_sums_out>(kernels::kQuantizedWeightSumsKernel, F::Quant, kFold),
    def<&quantized_linear_out>(kernels::kQuantizedLinearKernel, F::Quant),
    only_where(def<&quantized_linear_float_out>(kernels::kQuantizedLinearFloatKernel, F::Quant),
               &has_float_io),
    only_where(def<&xnn_quantized_conv2d_float>(kernels::kQuantizedConv2dFloatKernel, F::Quant),
               &has_float_io),
    def<&quantized_conv2d_out>(kernels::kQuantizedConv2dKernel, F::Quant),
    def<&quantized_mean_out>(kernels::kQuantizedMeanKernel, F::Quant),

    // ---- xnnpack: an XNNPACK delegate's nodes (delegates/xnnpack_lowering.cpp) --
    def<&xnn_binary<BinaryFn::Add>>("xnnpack::add", F::Elementwise),
    def<&xnn_binary<BinaryFn::Sub>>("xnnpack::subtract", F::Elementwise),
    def<&xnn_binary<BinaryFn::Mul>>("xnnpack::multiply", F::Elementwise),
    def<&xnn_binary<BinaryFn::Div>>("xnnpack::divide", F::Elementwise),
    def<&xnn_binary<BinaryFn::Minimum>>("xnnpack::minimum", F::Elementwise),
    def<&xnn_binary<BinaryFn::Maximum>>("xnnpack::maximum", F::Elementwise),
    def<&xnn_prelu>("xnnpack::prelu", F::Elementwise),
    def<&xnn_unary<XnnUnary::Sigmoid>>("xnnpack::sigmoid", F::Elementwise),
    def<&xnn_unary<XnnUnary::Floor>>("xnnpack::floor", F::Elementwise),
    def<&xnn_unary<XnnUnary::Ceiling>>("xnnpack::ceiling", F::Elementwise),
    def<&xnn_unary<XnnUnary::SquareRoot>>("xnnpack::square_root", F::Elementwise),
    def<&xnn_unary<XnnUnary::ReciprocalSquareRoot>>("xnnpack::reciprocal_square_root",
                                                    F::Elementwise),
    def<&xnn_unary<XnnUnary::Abs>>("xnnpack::abs", F::Elementwise),
    def<&xnn_unary<XnnUnary::Negate>>("xnnpack::negate", F::Elementwise),
    def<&xnn_unary<XnnUnary::Square>>("xnnpack::square", F::Elementwise),
    def<&xnn_unary<XnnUnary::Log>>("xnnpack::log", F::Elementwise),
    def<&xnn_unary<XnnUnary::Exp>>("xnnpack::exp", F::Elementwise),
    def<&xnn_unary<XnnUnary::Tanh>>("xnnpack::tanh", F::Elementwise),
    def<&xnn_unary<XnnUnary::Sin>>("xnnpack::sin", F::Elementwise),
    def<&xnn_unary<XnnUnary::Cos>>("xnnpack::cos", F::Elementwise),
    def<&xnn_unary<XnnUnary::Gelu>>("xnnpack::gelu", F::Elementwise),
    def<&xnn_unary<XnnUnary::Hardswish>>("xnnpack::hardswish", F::Elementwise),
    def<&xnn_leaky_relu>("xnnpack::leaky_relu", F::Elementwise),
    def<&xnn_elu>("xnnpack::elu", F::Elementwise),
    def<&xnn_clamp>("xnnpack::clamp", F::Elementwise),
    def<&xnn_softmax>("xnnpack::softmax", F::Softmax),
    def<&xnn_fully_connected>("xnnpack::fully_connected", F::Matmul),
    def<&xnn_batch_matrix_multiply>("xnnpack::batch_matrix_multiply", F::Matmul),
    def<&xnn_conv2d>("xnnpack::conv2d", F::Conv),
    def<&xnn_conv2d_nchw>("xnnpack::conv2d_nchw", F::Conv),
    def<&xnn_depthwise_conv2d>("xnnpack::depthwise_conv2d", F::Conv),
    def<&xnn_conv2d_hardswish>("xnnpack::conv2d_hardswish", F::Conv),
    def<&xnn_conv2d_add>("xnnpack::conv2d_add", F::Conv),
    def<&xnn_depthwise_conv2d_hardswish>("xnnpack::depthwise_conv2d_hardswish", F::Conv),
    def<&xnn_conv_transpose2d>("xnnpack::conv_transpose2d", F::Conv),
    def<&xnn_avg_pooling2d>("xnnpack::avg_pooling2d", F::Pool),
    def<&xnn_max_pooling2d>("xnnpack::max_pooling2d", F::Pool),
    def<&xnn_argmax_pooling2d>("xnnpack::argmax_pooling2d", F::Pool),
    def<&xnn_global_avg_pooling2d>("xnnpack::global_avg_pooling2d", F::Pool),
    def<&xnn_static_resize_bilinear2d>("xnnpack::static_resize_bilinear2d", F::Pool),
    def<&xnn_static_transpose>("xnnpack::static_transpose", F::Shape),
    def<&xnn_static_reshape>("xnnpack::static_reshape", F::Shape),
    def<&xnn_static_slice>("xnnpack::static_slice", F::Shape),
    def<&xnn_static_constant_pad>("xnnpack::static_constant_pad", F::Shape),
    def<&xnn_concatenate>("xnnpack::concatenate", F::Shape),
    def<&xnn_copy>("xnnpack::copy", F::Shape),
    def<&xnn_convert>("xnnpack::convert", F::Shape),
    only_where(def<&xnn_fully_connected_dq>("xnnpack::fully_connected_dq", F::Quant),
               &has_dynamic_linear),
    def<&xnn_quantized_conv2d>("xnnpack::quantized_conv2d", F::Quant),
};

}  // namespace

std::span<const OpDef> all_ops() {
  return kOps;
}

void register_ops(kernels::KernelRegistry& registry, Device device, const OpBackend& backend) {
  detail::g_backends[static_cast<size_t>(device)] = &backend;
  for (const OpDef& op : kOps) {
    if (!backend.provides(op.family)) continue;
    if (op.provided != nullptr && !op.provided(backend)) continue;
    kernels::KernelInfo info;
    info.fn = op.fn;
    info.num_args = op.num_args;
    info.arg_kinds = op.arg_kinds;
    info.foldable = op.foldable;
    info.dtypes = backend.dtypes[static_cast<size_t>(op.family)];
    registry.add(std::string(op.name), device, info);
  }
}

}  // namespace pterun::ops
