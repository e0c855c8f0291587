// Copies, clones and casts on CUDA, mirroring backend/cpu/ops/copy.cpp:
// copy_, copy.out, clone, the dim-order copies and _to_copy. Same-dtype
// copies move element bits (one cudaMemcpyAsync when both sides are dense
// in the same order); dtype changes go through the elementwise engine,
// computing in the source's own type so the store is the only conversion.

#include <cstdint>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/convert_copy.h"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/cuda/strided_copy.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/shape_copy.h"

namespace pterun::cuda {
namespace {

template <typename C>
struct Identity {
  __device__ C operator()(C x) const { return x; }
};

}  // namespace

void convert_copy(const kernels::KernelContext& ctx, Tensor& out, const Tensor& src,
                  const char* op) {
  const int64_t n = out.numel();
  if (n == 0) return;
  if (src.dtype() == out.dtype()) {
    // The strided copy (memcpy, tiled transpose, row or flat kernel) moves
    // the bits, with src's broadcast dims at stride 0.
    const StridedIndexer<2> ix = make_indexer<2>(out, {&src}, op);
    if (is_linear(ix)) {
      PTERUN_CUDA_CHECK(cudaMemcpyAsync(out.data(), src.data(), out.nbytes(),
                                        cudaMemcpyDeviceToDevice, stream(ctx)));
      return;
    }
    int64_t src_strides[kMaxRank];
    broadcast_strides(src, out, src_strides, op);
    device_strided_copy(ctx, out.data(), out.strides(), src.data(),
                        std::span<const int64_t>(src_strides, out.dim()), out.sizes(),
                        out.element_size());
    return;
  }
  PTERUN_CHECK(!kernels::is_complex(src.dtype()) && !kernels::is_complex(out.dtype()),
               ErrorCode::NotSupported, op, ": conversion from ", dtype_name(src.dtype()), " to ",
               dtype_name(out.dtype()), " is not supported");
  // The casts models use most get the vectorised contiguous kernel.
  const DType from = src.dtype(), to = out.dtype();
  if (from == DType::Float32 && to == DType::Float16) {
    return elementwise<float, __half, 1>(ctx, out, {&src}, Identity<float>{}, op);
  }
  if (from == DType::Float32 && to == DType::BFloat16) {
    return elementwise<float, __nv_bfloat16, 1>(ctx, out, {&src}, Identity<float>{}, op);
  }
  if (from == DType::Float16 && to == DType::Float32) {
    return elementwise<__half, float, 1>(ctx, out, {&src}, Identity<float>{}, op);
  }
  if (from == DType::BFloat16 && to == DType::Float32) {
    return elementwise<__nv_bfloat16, float, 1>(ctx, out, {&src}, Identity<float>{}, op);
  }
  visit_dtype(from, op, [&]<typename S>() {
    elementwise_strided<S, 1>(ctx, out, {&src}, Identity<S>{}, op);
  });
}

}  // namespace pterun::cuda

namespace pterun::kernels::cuda_ops {
namespace {

// copy_(Tensor(a!) self, Tensor src, bool non_blocking=False).
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
  cuda::convert_copy(ctx, self, src, op);
}

// copy.out(Tensor self, Tensor src, bool non_blocking=False, *, Tensor(a!) out).
void copy_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::copy.out";
  const Tensor& self = args[0]->to_tensor();
  const Tensor& src = args[1]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  ops::check_same_dtype(out, self, "out", op);
  resize_output(out, self.sizes(), op);
  cuda::convert_copy(ctx, out, src, op);
}

/// out = in (same dtype), out resized to in's shape and kept in its own
/// dim order: the CPU's copy_view_into(out, in, view_of(in)).
void copy_same_dtype(KernelContext& ctx, Tensor& out, const Tensor& in, const char* op) {
  ops::check_same_dtype(out, in, "out", op);
  resize_output(out, in.sizes(), op);
  cuda::convert_copy(ctx, out, in, op);
}

// clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void clone_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::clone.out";
  auto memory_format = args[1]->to_optional_int();
  PTERUN_CHECK(!memory_format || *memory_format == 0 || *memory_format == 1,
               ErrorCode::InvalidArgument, op, ": memory format ", memory_format.value_or(-1),
               " is not supported (expected none, contiguous or preserve)");
  copy_same_dtype(ctx, args[2]->to_tensor(), args[0]->to_tensor(), op);
}

// dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False,
//                                     int[]? dim_order=None, Tensor(a!) out)
void clone_dim_order_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "dim_order_ops::_clone_dim_order.out";
  Tensor& out = args[3]->to_tensor();
  ops::check_dim_order_arg(args[2]->to_optional_int_list(), out, op);
  copy_same_dtype(ctx, out, args[0]->to_tensor(), op);
}

// dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False,
//                                       int[]? dim_order=None, Tensor(a!) out): the cast op.
void to_dim_order_copy_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "dim_order_ops::_to_dim_order_copy.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  ops::check_dim_order_arg(args[2]->to_optional_int_list(), out, op);
  resize_output(out, in.sizes(), op);
  cuda::convert_copy(ctx, out, in, op);
}

// _to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None,
//              Tensor(a!) out)
void to_copy_out(KernelContext& ctx, std::span<Value* const> args) {
  const char* op = "aten::_to_copy.out";
  const Tensor& in = args[0]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  ops::check_memory_format(args[2]->to_optional_int(), out, op);
  resize_output(out, in.sizes(), op);
  cuda::convert_copy(ctx, out, in, op);
}

// dim_order_ops::_empty_dim_order.out(int[] size, *, int[]? dim_order=None, Tensor(a!) out):
// only shapes the output.
void empty_dim_order_out(KernelContext& /*ctx*/, std::span<Value* const> args) {
  const char* op = "dim_order_ops::_empty_dim_order.out";
  Tensor& out = args[2]->to_tensor();
  ops::check_dim_order_arg(args[1]->to_optional_int_list(), out, op);
  resize_output(out, args[0]->to_int_list(), op);
}

// lift_fresh_copy.out(Tensor self, *, Tensor(a!) out): a plain copy.
void lift_fresh_copy_out(KernelContext& ctx, std::span<Value* const> args) {
  copy_same_dtype(ctx, args[1]->to_tensor(), args[0]->to_tensor(), "aten::lift_fresh_copy.out");
}

}  // namespace

void register_copy_ops(KernelRegistry& r) {
  r.add("aten::copy_", Device::CUDA, &copy_inplace);
  r.add("aten::copy.out", Device::CUDA, &copy_out);
  r.add("aten::clone.out", Device::CUDA, &clone_out);
  r.add("dim_order_ops::_clone_dim_order.out", Device::CUDA, &clone_dim_order_out);
  r.add("dim_order_ops::_to_dim_order_copy.out", Device::CUDA, &to_dim_order_copy_out);
  r.add("aten::_to_copy.out", Device::CUDA, &to_copy_out);
  r.add("dim_order_ops::_empty_dim_order.out", Device::CUDA, &empty_dim_order_out);
  r.add("aten::lift_fresh_copy.out", Device::CUDA, &lift_fresh_copy_out);
}

}  // namespace pterun::kernels::cuda_ops
