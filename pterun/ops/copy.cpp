// Front-ends of the copy family (copy.h).

#include "pterun/ops/copy.h"

#include "pterun/core/error.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/backend.h"
#include "pterun/ops/checks.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::ops {
namespace {

void convert_into(const KernelContext& ctx, Tensor& out, const Tensor& src, const char* op) {
  check_broadcasts_to(src, out.sizes(), op);  // here, so that every backend says the same
  backend(ctx).copy->convert_copy(ctx, out, src, op);
}

}  // namespace

// Writes src, broadcast to self's shape and converted to self's dtype, into
// self. The trailing return entry aliases self.
void copy_inplace(KernelContext& ctx, Tensor& self, const Tensor& src) {
  const char* op = "aten::copy_";
  if (src.data() == self.data() && src.dtype() == self.dtype() && src.dim() == self.dim()) {
    bool same = true;
    for (size_t d = 0; same && d < self.dim(); ++d) {
      same = src.size(d) == self.size(d) && src.stride(d) == self.stride(d);
    }
    if (same) return;  // copying a tensor onto itself
  }
  convert_into(ctx, self, src, op);
}

// The functional copy_: out takes self's shape and dtype and src's values.
void copy_out(KernelContext& ctx, const Tensor& self, const Tensor& src,
              const Value& /*non_blocking*/, Tensor& out) {
  const char* op = "aten::copy.out";
  check_same_dtype(out, self, "out", op);
  kernels::resize_output(out, self.sizes(), op);
  convert_into(ctx, out, src, op);
}

void clone_out(KernelContext& ctx, const Tensor& in, std::optional<int64_t> memory_format,
               Tensor& out) {
  const char* op = "aten::clone.out";
  PTERUN_CHECK(!memory_format || *memory_format == 0 || *memory_format == 1,
               ErrorCode::InvalidArgument, op, ": memory format ", memory_format.value_or(-1),
               " is not supported (expected none, contiguous or preserve)");
  copy_view_into(ctx, out, in, view_of(in), op, mover(ctx));
}

// A copy into out's dim order, which dim_order (if given) names.
void clone_dim_order_out(KernelContext& ctx, const Tensor& in, const Value& /*non_blocking*/,
                         std::optional<IntList> dim_order, Tensor& out) {
  const char* op = "dim_order_ops::_clone_dim_order.out";
  check_dim_order_arg(dim_order, out, op);
  copy_view_into(ctx, out, in, view_of(in), op, mover(ctx));
}

// The cast op: converts to out's dtype and dim order.
void to_dim_order_copy_out(KernelContext& ctx, const Tensor& in, const Value& /*non_blocking*/,
                           std::optional<IntList> dim_order, Tensor& out) {
  const char* op = "dim_order_ops::_to_dim_order_copy.out";
  check_dim_order_arg(dim_order, out, op);
  kernels::resize_output(out, in.sizes(), op);
  convert_into(ctx, out, in, op);
}

// The cast op of programs exported without dim order.
void to_copy_out(KernelContext& ctx, const Tensor& in, const Value& /*non_blocking*/,
                 std::optional<int64_t> memory_format, Tensor& out) {
  const char* op = "aten::_to_copy.out";
  check_memory_format(memory_format, out, op);
  kernels::resize_output(out, in.sizes(), op);
  convert_into(ctx, out, in, op);
}

// Only shapes the output.
void empty_dim_order_out(KernelContext& /*ctx*/, IntList size, std::optional<IntList> dim_order,
                         Tensor& out) {
  const char* op = "dim_order_ops::_empty_dim_order.out";
  check_dim_order_arg(dim_order, out, op);
  kernels::resize_output(out, size, op);
}

// A plain copy.
void lift_fresh_copy_out(KernelContext& ctx, const Tensor& in, Tensor& out) {
  copy_view_into(ctx, out, in, view_of(in), "aten::lift_fresh_copy.out", mover(ctx));
}

// A 0-D view of src's element, converted into out.
void item_copy_out(KernelContext& ctx, const Tensor& src, Tensor& out) {
  const char* op = "aten::scalar_tensor.out";
  PTERUN_CHECK(src.numel() == 1, ErrorCode::InvalidArgument, op, ": expected one element, got ",
               describe(src));
  kernels::resize_output(out, {}, op);
  Tensor element = src;
  element.reshape_unchecked({});
  convert_into(ctx, out, element, op);
}

}  // namespace pterun::ops
