#pragma once

// The copy family: copy_, copy.out, clone, the dim-order copies (the
// exporter's cast and layout-change ops), _to_copy and lift_fresh_copy.
// Same-dtype copies (clone and its kin) move bytes through the device's
// Mover (shape.h); copies that may change the dtype go through the
// backend's convert_copy.

#include <cstdint>
#include <optional>

#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

struct CopyBackend {
  /// out = src broadcast to out's shape, converted to out's dtype, in out's
  /// dim order (ops::convert_copy's contract, shape_copy.h): Error
  /// InvalidArgument naming `op` when src does not broadcast to out.
  void (*convert_copy)(const KernelContext& ctx, Tensor& out, const Tensor& src, const char* op);
};

// copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
void copy_inplace(KernelContext& ctx, Tensor& self, const Tensor& src);
// copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out)
void copy_out(KernelContext& ctx, const Tensor& self, const Tensor& src,
              const Value& /*non_blocking*/, Tensor& out);
// clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void clone_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> memory_format,
               Tensor& out);
// dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False,
//   int[]? dim_order=None, Tensor(a!) out)
void clone_dim_order_out(KernelContext& ctx, const Tensor& in, const Value& /*non_blocking*/,
                         std::optional<IntList> dim_order, Tensor& out);
// dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
//   int[]? dim_order=None, Tensor(a!) out)
void to_dim_order_copy_out(KernelContext& ctx, const Tensor& in, const Value& /*non_blocking*/,
                           std::optional<IntList> dim_order, Tensor& out);
// _to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None,
//   Tensor(a!) out)
void to_copy_out(KernelContext& ctx, const Tensor& in, const Value& /*non_blocking*/,
                 std::optional<int64_t> memory_format, Tensor& out);
// dim_order_ops::_empty_dim_order.out(int[] size, *, int[]? dim_order=None, Tensor(a!) out)
void empty_dim_order_out(KernelContext& ctx, IntList size, std::optional<IntList> dim_order,
                         Tensor& out);
// lift_fresh_copy.out(Tensor self, *, Tensor(a!) out)
void lift_fresh_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out);
// pterun::item_copy.out(Tensor src, *, Tensor(a!) out) (kernels/internal_ops.h): out, 0-D,
// is src's single element converted to out's dtype.
void item_copy_out(KernelContext& ctx, const Tensor& src, Tensor& out);

}  // namespace pterun::ops
