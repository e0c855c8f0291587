// Copies, clones and casts: copy_ (in place, broadcasting), clone, the
// dim-order copies (the exporter's cast and layout-change ops) and
// _to_copy. Same-dtype copies are strided byte copies; dtype changes go
// through the elementwise engine, float -> int truncating via int64.

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::cpu {
namespace {

using ops::check_dim_order_arg;
using ops::check_memory_format;
using ops::check_rank;
using ops::view_of;

using kernels::KernelContext;

// copy_(Tensor(a!) self, Tensor src, bool non_blocking=False): writes src, broadcast to
// self's shape and converted to self's dtype, into self. The trailing return entry aliases
// self.
void copy_inplace(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::copy_";
  Tensor& self = args[0]->to_tensor();
  const Tensor& src = args[1]->to_tensor();
  if (src.data() == self.data() && src.dtype() == self.dtype() && src.dim() == self.dim()) {
    bool same = true;
    for (size_t d = 0; same && d < self.dim(); ++d) {
      same = src.size(d) == self.size(d) && src.stride(d) == self.stride(d);
    }
    if (same) return;  // copying a tensor onto itself
  }
  ops::convert_copy(ctx, self, src, op, cpu_mover());
}

// copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out): the
// functional copy_: out takes self's shape and dtype and src's values.
void copy_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::copy.out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& src = args[1]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  ops::check_same_dtype(out, self, "out", op);
  kernels::resize_output(out, self.sizes(), op);
  ops::convert_copy(ctx, out, src, op, cpu_mover());
}

// clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void clone_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::clone.out";
  const Tensor& in = args[0]->to_tensor();
  auto memory_format = args[1]->to_optional_int();
  PTERUN_CHECK(!memory_format || *memory_format == 0 || *memory_format == 1,
               ErrorCode::InvalidArgument, op, ": memory format ", memory_format.value_or(-1),
               " is not supported (expected none, contiguous or preserve)");
  ops::copy_view_into(ctx, args[2]->to_tensor(), in, view_of(in), op, cpu_mover());
}

// dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False,
//                                     int[]? dim_order=None, Tensor(a!) out):
// a copy into out's dim order, which dim_order (if given) names.
void clone_dim_order_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "dim_order_ops::_clone_dim_order.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  check_dim_order_arg(args[2]->to_optional_int_list(), out, op);
  ops::copy_view_into(ctx, out, in, view_of(in), op, cpu_mover());
}

// dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
//                                       int[]? dim_order=None, Tensor(a!) out):
// the cast op: converts to out's dtype and dim order.
void to_dim_order_copy_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "dim_order_ops::_to_dim_order_copy.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  check_dim_order_arg(args[2]->to_optional_int_list(), out, op);
  kernels::resize_output(out, in.sizes(), op);
  ops::convert_copy(ctx, out, in, op, cpu_mover());
}

// _to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None,
//              Tensor(a!) out): the cast op of programs exported without dim order.
void to_copy_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::_to_copy.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  check_memory_format(args[2]->to_optional_int(), out, op);
  kernels::resize_output(out, in.sizes(), op);
  ops::convert_copy(ctx, out, in, op, cpu_mover());
}

// dim_order_ops::_empty_dim_order.out(int[] size, *, int[]? dim_order=None, Tensor(a!) out):
// only shapes the output.
void empty_dim_order_out(KernelContext& /*ctx*/, std::span<Value* const> args) {
  const char* op = "dim_order_ops::_empty_dim_order.out";
  auto size = args[0]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  check_dim_order_arg(args[1]->to_optional_int_list(), out, op);
  kernels::resize_output(out, size, op);
}

// lift_fresh_copy.out(Tensor self, *, Tensor(a!) out): a plain copy.
void lift_fresh_copy_out(KernelContext& ctx, std::span<Value* const> args) {
  const Tensor& in = args[0]->to_tensor();
  ops::copy_view_into(ctx, args[1]->to_tensor(), in, view_of(in), "aten::lift_fresh_copy.out",
                      cpu_mover());
}

}  // namespace

void register_copy_ops(kernels::KernelRegistry& r) {
  r.add("aten::copy_", Device::CPU, &copy_inplace);
  r.add("aten::copy.out", Device::CPU, &copy_out);
  r.add("aten::clone.out", Device::CPU, &clone_out);
  r.add("dim_order_ops::_clone_dim_order.out", Device::CPU, &clone_dim_order_out);
  r.add("dim_order_ops::_to_dim_order_copy.out", Device::CPU, &to_dim_order_copy_out);
  r.add("aten::_to_copy.out", Device::CPU, &to_copy_out);
  r.add("dim_order_ops::_empty_dim_order.out", Device::CPU, &empty_dim_order_out);
  r.add("aten::lift_fresh_copy.out", Device::CPU, &lift_fresh_copy_out);
}

}  // namespace pterun::cpu
