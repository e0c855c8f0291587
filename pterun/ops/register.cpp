// Every operator pterun runs, once: its name, front-end, family and whether
// constant folding may run it at load. A backend registers the operators of
// the families it computes (register_ops). To add an operator, see
// docs/adding_an_operator.md.

#include "pterun/ops/register.h"

#include <iterator>

#include "pterun/kernels/internal_ops.h"
#include "pterun/ops/conv.h"
#include "pterun/ops/copy.h"
#include "pterun/ops/creation.h"
#include "pterun/ops/matmul.h"
#include "pterun/ops/norm.h"
#include "pterun/ops/pool.h"
#include "pterun/ops/prim.h"
#include "pterun/ops/shape.h"
#include "pterun/ops/softmax.h"

namespace pterun::ops {
namespace {

using F = OpFamily;
constexpr Fold kFold = Fold::Yes;

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

    // ---- softmax ----------------------------------------------------------------
    def<&softmax_out>("aten::_softmax.out", F::Softmax),
    def<&log_softmax_out>("aten::_log_softmax.out", F::Softmax),

    // ---- norm -------------------------------------------------------------------
    def<&native_layer_norm_out>("aten::native_layer_norm.out", F::Norm),
    def<&batch_norm_no_training_out>("aten::_native_batch_norm_legit_no_training.out", F::Norm),
    def<&native_group_norm_out>("aten::native_group_norm.out", F::Norm),

    // ---- matmul -----------------------------------------------------------------
    def<&mm_out>("aten::mm.out", F::Matmul),
    def<&bmm_out>("aten::bmm.out", F::Matmul),
    def<&addmm_out>("aten::addmm.out", F::Matmul),
    def<&linear_out>("aten::linear.out", F::Matmul),

    // ---- conv -------------------------------------------------------------------
    def<&convolution_out>("aten::convolution.out", F::Conv),

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
};

}  // namespace

std::span<const OpDef> all_ops() {
  return kOps;
}

void register_ops(kernels::KernelRegistry& registry, Device device, const OpBackend& backend) {
  detail::g_backends[static_cast<size_t>(device)] = &backend;
  for (const OpDef& op : kOps) {
    if (!backend.provides(op.family)) continue;
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
