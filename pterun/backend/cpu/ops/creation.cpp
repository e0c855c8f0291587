// Creation ops: fills (full, zeros, ones, fill, scalar_tensor and the
// *_like forms), empty (shape only) and ranges (arange, linspace). The
// output's dtype decides the element type.

#include <cmath>
#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/creation_util.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::cpu {
namespace {

using ops::check_dim_order_arg;
using ops::check_memory_format;
using ops::check_rank;
using ops::view_of;

using kernels::Family;
using kernels::KernelContext;

// full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out)
void full_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::full.out";
  Tensor& out = args[2]->to_tensor();
  kernels::resize_output(out, args[0]->to_int_list(), op);
  ops::fill_scalar(ctx, out, args[1]->to_scalar(), op, cpu_mover());
}

// full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None,
//               Tensor(a!) out)
void full_like_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::full_like.out";
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  check_memory_format(args[2]->to_optional_int(), out, op);
  kernels::resize_output(out, self.sizes(), op);
  ops::fill_scalar(ctx, out, args[1]->to_scalar(), op, cpu_mover());
}

// scalar_tensor.out(Scalar s, *, Tensor(a!) out): a 0-dim tensor holding s.
void scalar_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::scalar_tensor.out";
  Tensor& out = args[1]->to_tensor();
  kernels::resize_output(out, {}, op);
  ops::fill_scalar(ctx, out, args[0]->to_scalar(), op, cpu_mover());
}

// zeros.out / ones.out (SymInt[] size, *, Tensor(a!) out)
template <int kValue>
void constant_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kValue == 0 ? "aten::zeros.out" : "aten::ones.out";
  Tensor& out = args[1]->to_tensor();
  kernels::resize_output(out, args[0]->to_int_list(), op);
  ops::fill_scalar(ctx, out, Scalar::from_int(kValue), op, cpu_mover());
}

// zeros_like.out / ones_like.out (Tensor self, *, MemoryFormat? memory_format=None,
//                                 Tensor(a!) out)
template <int kValue>
void constant_like_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = kValue == 0 ? "aten::zeros_like.out" : "aten::ones_like.out";
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  check_memory_format(args[1]->to_optional_int(), out, op);
  kernels::resize_output(out, self.sizes(), op);
  ops::fill_scalar(ctx, out, Scalar::from_int(kValue), op, cpu_mover());
}

// empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out): shape only.
void empty_out(KernelContext& /*ctx*/, std::span<Value* const> args) {
  const char* op = "aten::empty.out";
  Tensor& out = args[2]->to_tensor();
  check_memory_format(args[1]->to_optional_int(), out, op);
  kernels::resize_output(out, args[0]->to_int_list(), op);
}

// empty_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void empty_like_out(KernelContext& /*ctx*/, std::span<Value* const> args) {
  const char* op = "aten::empty_like.out";
  Tensor& out = args[2]->to_tensor();
  check_memory_format(args[1]->to_optional_int(), out, op);
  kernels::resize_output(out, args[0]->to_tensor().sizes(), op);
}

// fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out)
void fill_scalar_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::fill.Scalar_out";
  const Tensor& self = args[0]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  ops::check_same_dtype(out, self, "out", op);
  kernels::resize_output(out, self.sizes(), op);
  ops::fill_scalar(ctx, out, args[1]->to_scalar(), op, cpu_mover());
}

// fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out): value is 0-dim.
void fill_tensor_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::fill.Tensor_out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& value = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  ops::check_same_dtype(out, self, "out", op);
  check_rank(value, 0, "a value", op);
  kernels::resize_output(out, self.sizes(), op);
  // The value converted to out's dtype, then repeated.
  alignas(16) unsigned char element[16] = {};
  Tensor one(out.dtype(), {});
  one.set_data(element, sizeof(element));
  ops::convert_copy(ctx, one, value, op, cpu_mover());
  cpu_mover().fill(ctx, out, element);
}

/// Writes f(i) into the 1-D tensor `out` for every i, on threads.
template <typename T, typename F>
void fill_indexed(const KernelContext& ctx, Tensor& out, F f) {
  T* data = out.data_as<T>();
  const int64_t stride = out.numel() > 0 ? out.stride(0) : 1;
  cpu::parallel_for(ctx, out.numel(), 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) data[i * stride] = f(i);
  });
}

/// arange: out[i] = start + i * step for i < ceil((end - start) / step), following ATen:
/// integer outputs use start and step truncated to int64 (int64 also sizes with them);
/// floating outputs compute in double (float for f16/bf16).
void arange_into(const KernelContext& ctx, Tensor& out, const Scalar& start, const Scalar& end,
                 const Scalar& step, const char* op) {
  kernels::prepare_arange(out, start, end, step, op);
  kernels::visit(out.dtype(), Family::RealHBF16, op, [&]<typename T>() {
    if constexpr (std::is_integral_v<T>) {
      const int64_t s = start.to_int(), st = step.to_int();
      fill_indexed<T>(ctx, out, [&](int64_t i) { return kernels::convert<T>(s + i * st); });
    } else {
      using A = std::conditional_t<sizeof(T) == 2, float, double>;
      const A s = static_cast<A>(start.to_double()), st = static_cast<A>(step.to_double());
      fill_indexed<T>(ctx, out, [&](int64_t i) {
        return kernels::convert<T>(static_cast<A>(s + static_cast<A>(i) * st));
      });
    }
  });
}

// arange.out(Scalar end, *, Tensor(a!) out)
void arange_out(KernelContext& ctx, std::span<Value* const> args) {
  arange_into(ctx, args[1]->to_tensor(), Scalar::from_int(0), args[0]->to_scalar(),
              Scalar::from_int(1), "aten::arange.out");
}

// arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out)
void arange_start_out(KernelContext& ctx, std::span<Value* const> args) {
  arange_into(ctx, args[3]->to_tensor(), args[0]->to_scalar(), args[1]->to_scalar(),
              args[2]->to_scalar(), "aten::arange.start_out");
}

// linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out): `steps` evenly
// spaced values, the first half counted from start and the second from end (as ATen does).
void linspace_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::linspace.out";
  const Scalar start = args[0]->to_scalar(), end = args[1]->to_scalar();
  const int64_t steps = args[2]->to_int();
  Tensor& out = args[3]->to_tensor();
  kernels::prepare_linspace(out, steps, op);
  kernels::visit(out.dtype(), Family::RealHBF16, op, [&]<typename T>() {
    // Integer outputs step in double from start and end truncated to T.
    using A = std::conditional_t<std::is_integral_v<T>, double, kernels::ComputeOf<T>>;
    const A s = std::is_integral_v<T> ? A(start.to_int()) : A(start.to_double());
    const A e = std::is_integral_v<T> ? A(end.to_int()) : A(end.to_double());
    const A step = steps > 1 ? (e - s) / static_cast<A>(steps - 1) : A(0);
    const int64_t half = steps / 2;
    fill_indexed<T>(ctx, out, [&](int64_t i) {
      A v = i < half ? s + step * static_cast<A>(i) : e - step * static_cast<A>(steps - i - 1);
      return kernels::convert<T>(steps == 1 ? s : v);
    });
  });
}

}  // namespace

void register_creation_ops(kernels::KernelRegistry& r) {
  r.add("aten::full.out", Device::CPU, &full_out);
  r.add("aten::full_like.out", Device::CPU, &full_like_out);
  r.add("aten::scalar_tensor.out", Device::CPU, &scalar_tensor_out);
  r.add("aten::zeros.out", Device::CPU, &constant_out<0>);
  r.add("aten::ones.out", Device::CPU, &constant_out<1>);
  r.add("aten::zeros_like.out", Device::CPU, &constant_like_out<0>);
  r.add("aten::ones_like.out", Device::CPU, &constant_like_out<1>);
  r.add("aten::empty.out", Device::CPU, &empty_out);
  r.add("aten::empty_like.out", Device::CPU, &empty_like_out);
  r.add("aten::fill.Scalar_out", Device::CPU, &fill_scalar_out);
  r.add("aten::fill.Tensor_out", Device::CPU, &fill_tensor_out);
  r.add("aten::arange.out", Device::CPU, &arange_out);
  r.add("aten::arange.start_out", Device::CPU, &arange_start_out);
  r.add("aten::linspace.out", Device::CPU, &linspace_out);
}

}  // namespace pterun::cpu
