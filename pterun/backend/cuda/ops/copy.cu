// The CUDA copy table (pterun/ops/copy.h): convert_copy, under copy_,
// copy.out, the casts and fill.Tensor_out. Same-dtype copies move element
// bits (one cudaMemcpyAsync when both sides are dense in the same order);
// dtype changes go through the elementwise engine, computing in the
// source's own type so the store is the only conversion.

#include <cstdint>
#include <type_traits>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/convert_copy.h"
#include "pterun/backend/cuda/ops/elementwise.cuh"
#include "pterun/backend/cuda/ops/ops.h"
#include "pterun/backend/cuda/strided_copy.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"
#include "pterun/ops/copy.h"

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

const ops::CopyBackend& copy_backend() {
  static constexpr ops::CopyBackend kCopy{&cuda::convert_copy};
  return kCopy;
}

}  // namespace pterun::kernels::cuda_ops
