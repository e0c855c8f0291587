#pragma once

// The shape kernels (shape.cpp, shape_concat.cpp, shape_rearrange.cpp and
// the slice/select scatters of index.cpp, et_copy_index of prim.cpp): argument checks, view
// arithmetic and output resizing written once over a Mover (shape_copy.h), registered for the CPU
// with cpu_mover() and for CUDA with the CUDA backend's movers.

#include <cstddef>
#include <iterator>
#include <span>
#include <utility>

#include "pterun/backend/cpu/ops/shape_copy.h"
#include "pterun/core/value.h"
#include "pterun/kernels/registry.h"

namespace pterun::cpu::shape {

using Args = std::span<Value* const>;
using Kernel = void (*)(const Mover& m, kernels::KernelContext& ctx, Args args);

// shape.cpp
void view_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void permute_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void expand_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void unsqueeze_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void squeeze_copy_dim_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void squeeze_copy_dims_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void squeeze_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void slice_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void select_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void narrow_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void transpose_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void t_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void as_strided_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void alias_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void detach_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void unfold_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void diagonal_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
// shape_concat.cpp
void cat_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void stack_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void split_with_sizes_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void split_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void unbind_copy_out(const Mover& m, kernels::KernelContext& ctx, Args args);
// shape_rearrange.cpp
void repeat_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void flip_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void roll_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void tril_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void triu_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void constant_pad_nd_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void pixel_shuffle_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void pixel_unshuffle_out(const Mover& m, kernels::KernelContext& ctx, Args args);
// index.cpp
void slice_scatter_out(const Mover& m, kernels::KernelContext& ctx, Args args);
void select_scatter_out(const Mover& m, kernels::KernelContext& ctx, Args args);
// prim.cpp
void et_copy_index(const Mover& m, kernels::KernelContext& ctx, Args args);

struct Entry {
  const char* name;
  Kernel fn;
};

/// Every shape kernel, by operator name: one list for both backends.
inline constexpr Entry kKernels[] = {
    {"aten::view_copy.out", &view_copy_out},
    {"aten::permute_copy.out", &permute_copy_out},
    {"aten::expand_copy.out", &expand_copy_out},
    {"aten::unsqueeze_copy.out", &unsqueeze_copy_out},
    {"aten::squeeze_copy.dim_out", &squeeze_copy_dim_out},
    {"aten::squeeze_copy.dims_out", &squeeze_copy_dims_out},
    {"aten::squeeze_copy.out", &squeeze_copy_out},
    {"aten::slice_copy.Tensor_out", &slice_copy_out},
    {"aten::select_copy.int_out", &select_copy_out},
    {"aten::narrow_copy.out", &narrow_copy_out},
    {"aten::transpose_copy.int_out", &transpose_copy_out},
    {"aten::t_copy.out", &t_copy_out},
    {"aten::as_strided_copy.out", &as_strided_copy_out},
    {"aten::alias_copy.out", &alias_copy_out},
    {"aten::detach_copy.out", &detach_copy_out},
    {"aten::unfold_copy.out", &unfold_copy_out},
    {"aten::diagonal_copy.out", &diagonal_copy_out},
    {"aten::cat.out", &cat_out},
    {"aten::stack.out", &stack_out},
    {"aten::split_with_sizes_copy.out", &split_with_sizes_copy_out},
    {"aten::split_copy.Tensor_out", &split_copy_out},
    {"aten::unbind_copy.int_out", &unbind_copy_out},
    {"aten::repeat.out", &repeat_out},
    {"aten::flip.out", &flip_out},
    {"aten::roll.out", &roll_out},
    {"aten::tril.out", &tril_out},
    {"aten::triu.out", &triu_out},
    {"aten::constant_pad_nd.out", &constant_pad_nd_out},
    {"aten::pixel_shuffle.out", &pixel_shuffle_out},
    {"aten::pixel_unshuffle.out", &pixel_unshuffle_out},
    {"aten::slice_scatter.out", &slice_scatter_out},
    {"aten::select_scatter.out", &select_scatter_out},
    {"executorch_prim::et_copy_index.tensor", &et_copy_index},
};

/// A KernelFn running `kFn` with the movers `kMover()`.
template <Kernel kFn, const Mover& (*kMover)()>
void with_mover(kernels::KernelContext& ctx, Args args) {
  kFn(kMover(), ctx, args);
}

/// Registers every entry of kKernels for `device`, bound to `kMover()`.
template <const Mover& (*kMover)()>
void register_kernels(kernels::KernelRegistry& r, kernels::Device device) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (r.add(kKernels[I].name, device, &with_mover<kKernels[I].fn, kMover>), ...);
  }
  (std::make_index_sequence<std::size(kKernels)>{});
}

}  // namespace pterun::cpu::shape
