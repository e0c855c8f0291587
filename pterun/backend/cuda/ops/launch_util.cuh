#pragma once

// Host halves of the device building blocks (device/device_util.cuh), for
// the launching code of the CUDA kernels in ops/:
//  - make_indexer: a StridedIndexer from sizes and strides, or for an
//    elementwise op from its output and inputs (broadcast_strides);
//  - is_linear: whether an indexer walks every operand contiguously;
//  - aligned (cuda_context.h, for host .cpp files too): whether a pointer
//    suits a vector access;
//  - visit_dtype(dtype, op, f): dispatch on a dtype to its device storage
//    type, Error NotSupported naming the op otherwise.
//
// Stable API: other kernel families include this header.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <cstdint>
#include <span>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/device_util.cuh"
#include "pterun/core/dtype.h"
#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/common/dtype_visit.h"

namespace pterun::cuda {

static_assert(kDeviceMaxRank == kMaxRank, "device/max_rank.h must match core/tensor.h");

/// The indexer of a `sizes`-shaped space where operand k has element
/// strides `strides[k]` (0 to broadcast), walked in `order` (a dim order,
/// outermost first; usually the output's): size-1 dimensions are dropped
/// and adjacent ones merged when every operand allows.
template <int N>
StridedIndexer<N> make_indexer(std::span<const int64_t> sizes,
                               const std::array<std::span<const int64_t>, N>& strides,
                               std::span<const uint8_t> order) {
  StridedIndexer<N> ix;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t d = order.empty() ? i : order[i];
    const int64_t size = sizes[d];
    if (size == 1) continue;
    if (ix.rank > 0) {
      const int p = ix.rank - 1;
      bool mergeable = true;
      for (int k = 0; k < N; ++k) mergeable = mergeable && ix.strides[k][p] == strides[k][d] * size;
      if (mergeable) {
        ix.sizes[p] *= size;
        for (int k = 0; k < N; ++k) ix.strides[k][p] = strides[k][d];
        continue;
      }
    }
    ix.sizes[ix.rank] = size;
    for (int k = 0; k < N; ++k) ix.strides[k][ix.rank] = strides[k][d];
    ++ix.rank;
  }
  return ix;
}

/// t's element strides over out's shape (out.dim() entries into `strides`):
/// leading and size-1 dims of t broadcast with stride 0. Error
/// InvalidArgument naming `op` when t does not broadcast to out.
inline void broadcast_strides(const Tensor& t, const Tensor& out, int64_t* strides,
                              const char* op) {
  const size_t rank = out.dim();
  PTERUN_CHECK(t.dim() <= rank, ErrorCode::InvalidArgument, op, ": input ", describe(t),
               " has more dimensions than the output ", describe(out));
  const size_t lead = rank - t.dim();
  for (size_t d = 0; d < lead; ++d) strides[d] = 0;
  for (size_t d = lead; d < rank; ++d) {
    int64_t s = t.size(d - lead);
    PTERUN_CHECK(s == out.size(d) || s == 1, ErrorCode::InvalidArgument, op, ": input ",
                 describe(t), " does not broadcast to the output ", describe(out));
    strides[d] = s == 1 ? 0 : t.stride(d - lead);
  }
}

/// The indexer of an elementwise op over out's shape: operand 0 is `out`,
/// operand k+1 is ins[k] broadcast to out's shape (leading and size-1
/// dimensions get stride 0). Dimensions are walked in out's memory order
/// (so the innermost is out's fastest), size-1 ones dropped and adjacent
/// ones merged when every operand allows. Error InvalidArgument naming `op`
/// when an input does not broadcast to out.
template <int N>
StridedIndexer<N> make_indexer(const Tensor& out, const std::array<const Tensor*, N - 1>& ins,
                               const char* op) {
  const size_t rank = out.dim();
  int64_t logical[N][kMaxRank] = {};
  for (size_t d = 0; d < rank; ++d) logical[0][d] = out.stride(d);
  for (int k = 0; k + 1 < N; ++k) broadcast_strides(*ins[k], out, logical[k + 1], op);
  std::array<std::span<const int64_t>, N> spans;
  for (int k = 0; k < N; ++k) spans[k] = std::span<const int64_t>(logical[k], rank);
  return make_indexer<N>(out.sizes(), spans, out.dim_order());
}

/// True when every operand of `ix` is walked contiguously in linear order
/// (one merged dimension of stride 1, or rank 0), so offset == index.
template <int N>
bool is_linear(const StridedIndexer<N>& ix) {
  if (ix.rank == 0) return true;
  if (ix.rank != 1) return false;
  for (int k = 0; k < N; ++k) {
    if (ix.strides[k][0] != 1) return false;
  }
  return true;
}

// ---- dtype dispatch --------------------------------------------------------------

/// The device's 16-bit floating types, for kernels::visit_storage.
struct DeviceTypes {
  using Half = __half;
  using BFloat16 = __nv_bfloat16;
};

/// Refuses a dtype the CUDA backend has no kernel for (Error NotSupported).
struct RefuseOnCuda {
  [[noreturn]] static void refuse(const char* op, DType d) {
    throw_error(ErrorCode::NotSupported,
                str_cat(op, ": dtype ", dtype_name(d), " is not supported on CUDA"));
  }
};

/// Calls `f.template operator()<T>()` with T the device storage type of `d`
/// (__half, __nv_bfloat16, bool, integer types, float, double). Error
/// NotSupported naming `op` for dtypes without one (complex, quantized,
/// float8 ...). Dispatch on the host: one kernel instantiation per T.
template <typename F>
decltype(auto) visit_dtype(DType d, const char* op, F&& f) {
  return kernels::visit_storage<DeviceTypes, kernels::VisitSet::Any, RefuseOnCuda>(d, op, f);
}

}  // namespace pterun::cuda
