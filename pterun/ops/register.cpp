// Every operator pterun runs, once: its name, front-end, family and whether
// constant folding may run it at load. A backend registers the operators of
// the families it computes (register_ops). To add an operator, see
// docs/adding_an_operator.md.

#include "pterun/ops/register.h"

#include <iterator>

#include "pterun/ops/index.h"
#include "pterun/ops/nonzero.h"
#include "pterun/ops/norm.h"
#include "pterun/ops/prim.h"
#include "pterun/ops/reduce.h"
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

    // ---- nonzero ----------------------------------------------------------------
    def<&nonzero_out>("aten::nonzero.out", F::Nonzero),
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
