#pragma once

// Device-side building blocks shared by the CUDA kernels:
//  - DeviceStorage / device_dtype_of: the C++ type a dtype is stored as on
//    the GPU (__half, __nv_bfloat16 for the 16-bit floats);
//  - convert<To>(from): element conversion with the CPU engine's rules
//    (docs/operators.md, "Conversions"): float -> integer through int64, NaN -> 0,
//    saturating outside int64; x -> bool is x != 0; 16-bit floats go
//    through float; bf16 rounds to nearest even bit-exactly like the CPU;
//  - load_as<C>(base, dtype, offset) / store_as(base, dtype, offset, v):
//    element access for a dtype known only at run time (a switch on a
//    value that is uniform over the grid, so it does not diverge);
//  - StridedIndexer<N>: a kernel parameter mapping a linear index over an
//    iteration space to element offsets of N operands.
// Their host halves (building indexers from Tensors, visit_dtype) are in
// backend/cuda/ops/launch_util.cuh.
//
// Device code: files in backend/cuda/device/ include only CUDA and standard
// headers, other device/ headers, core/dtype.h and core/math.h
// (scripts/check-layers checks it).
//
// Stable API: other kernel families include this header.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "pterun/backend/cuda/device/max_rank.h"
#include "pterun/core/dtype.h"
#include "pterun/core/math.h"

namespace pterun::cuda {

// ---- storage types -----------------------------------------------------------

template <DType D>
struct DeviceStorage;
#define PTERUN_DEVICE_STORAGE(D, T) \
  template <>                       \
  struct DeviceStorage<DType::D> {  \
    using type = T;                 \
  };
PTERUN_DEVICE_STORAGE(UInt8, uint8_t)
PTERUN_DEVICE_STORAGE(Int8, int8_t)
PTERUN_DEVICE_STORAGE(Int16, int16_t)
PTERUN_DEVICE_STORAGE(Int32, int32_t)
PTERUN_DEVICE_STORAGE(Int64, int64_t)
PTERUN_DEVICE_STORAGE(Float16, __half)
PTERUN_DEVICE_STORAGE(Float32, float)
PTERUN_DEVICE_STORAGE(Float64, double)
PTERUN_DEVICE_STORAGE(Bool, bool)
PTERUN_DEVICE_STORAGE(BFloat16, __nv_bfloat16)
PTERUN_DEVICE_STORAGE(UInt16, uint16_t)
PTERUN_DEVICE_STORAGE(UInt32, uint32_t)
PTERUN_DEVICE_STORAGE(UInt64, uint64_t)
#undef PTERUN_DEVICE_STORAGE

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// The type arithmetic runs in for device storage type T: float for the
/// 16-bit floats, T itself otherwise (like kernels::ComputeOf on the CPU).
template <typename T>
using DeviceComputeOf = std::conditional_t<kIsHalf<T>, float, T>;

/// The DType of a device storage type.
template <typename T>
constexpr DType device_dtype_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
  if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  if constexpr (std::is_same_v<T, __half>) return DType::Float16;
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  if constexpr (std::is_same_v<T, double>) return DType::Float64;
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return DType::BFloat16;
  if constexpr (std::is_same_v<T, uint16_t>) return DType::UInt16;
  if constexpr (std::is_same_v<T, uint32_t>) return DType::UInt32;
  if constexpr (std::is_same_v<T, uint64_t>) return DType::UInt64;
}

// ---- conversions ---------------------------------------------------------------

/// float -> bfloat16 exactly as pterun::BFloat16 does on the host: round to
/// nearest even, NaNs kept quiet with their high payload bits. On sm_80 and
/// later the rounding is the hardware's (one cvt.rn.bf16.f32, the same
/// result for every non-NaN float) and only NaNs take the bit path: a
/// dozen integer instructions per element were the limit of bf16
/// elementwise kernels.
__host__ __device__ inline __nv_bfloat16 float_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t bits32 = __float_as_uint(f);
  const uint16_t rounded = __bfloat16_as_ushort(__float2bfloat16_rn(f));
  const uint16_t nan = static_cast<uint16_t>((bits32 >> 16) | 0x40);
  return __ushort_as_bfloat16(f != f ? nan : rounded);
#else
#ifdef __CUDA_ARCH__
  uint32_t u = __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
#endif
  uint16_t bits;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((u >> 16) | 0x40);
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<uint16_t>(u >> 16);
  }
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __nv_bfloat16(raw);
#endif
}

/// Copies n units from s (stride si) to d (stride di), shared by kLanes
/// threads of which the caller is `lane`: four units in flight per thread.
template <int kLanes, typename U>
__device__ inline void copy_run(U* __restrict__ d, int64_t di, const U* __restrict__ s, int64_t si,
                                int64_t n, int lane) {
  int64_t k = lane;
  for (; k + 3 * kLanes < n; k += 4 * kLanes) {
    U x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) x[u] = s[(k + u * kLanes) * si];
#pragma unroll
    for (int u = 0; u < 4; ++u) d[(k + u * kLanes) * di] = x[u];
  }
  for (; k < n; k += kLanes) d[k * di] = s[k * si];
}

/// Converts between device storage / compute types with the CPU engine's
/// rules (kernels::convert).
template <typename To, typename From>
__host__ __device__ inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, __half>) {
    return convert<To>(__half2float(v));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return convert<To>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return float_to_bf16(static_cast<float>(v));
  } else {
    return ::pterun::math::convert_standard<To>(v);
  }
}

/// Element `offset` of `base` (dtype `d`) converted to C. Unknown dtypes
/// read as zero; hosts validate dtypes before launching.
template <typename C>
__device__ inline C load_as(const void* base, DType d, int64_t offset) {
  switch (d) {
    case DType::UInt8: return convert<C>(static_cast<const uint8_t*>(base)[offset]);
    case DType::Int8: return convert<C>(static_cast<const int8_t*>(base)[offset]);
    case DType::Int16: return convert<C>(static_cast<const int16_t*>(base)[offset]);
    case DType::Int32: return convert<C>(static_cast<const int32_t*>(base)[offset]);
    case DType::Int64: return convert<C>(static_cast<const int64_t*>(base)[offset]);
    case DType::Float16: return convert<C>(static_cast<const __half*>(base)[offset]);
    case DType::Float32: return convert<C>(static_cast<const float*>(base)[offset]);
    case DType::Float64: return convert<C>(static_cast<const double*>(base)[offset]);
    case DType::Bool: return convert<C>(static_cast<const bool*>(base)[offset]);
    case DType::BFloat16: return convert<C>(static_cast<const __nv_bfloat16*>(base)[offset]);
    case DType::UInt16: return convert<C>(static_cast<const uint16_t*>(base)[offset]);
    case DType::UInt32: return convert<C>(static_cast<const uint32_t*>(base)[offset]);
    case DType::UInt64: return convert<C>(static_cast<const uint64_t*>(base)[offset]);
    default: return C{};
  }
}

/// Stores `v` converted to dtype `d` at element `offset` of `base`.
template <typename R>
__device__ inline void store_as(void* base, DType d, int64_t offset, R v) {
  switch (d) {
    case DType::UInt8: static_cast<uint8_t*>(base)[offset] = convert<uint8_t>(v); break;
    case DType::Int8: static_cast<int8_t*>(base)[offset] = convert<int8_t>(v); break;
    case DType::Int16: static_cast<int16_t*>(base)[offset] = convert<int16_t>(v); break;
    case DType::Int32: static_cast<int32_t*>(base)[offset] = convert<int32_t>(v); break;
    case DType::Int64: static_cast<int64_t*>(base)[offset] = convert<int64_t>(v); break;
    case DType::Float16: static_cast<__half*>(base)[offset] = convert<__half>(v); break;
    case DType::Float32: static_cast<float*>(base)[offset] = convert<float>(v); break;
    case DType::Float64: static_cast<double*>(base)[offset] = convert<double>(v); break;
    case DType::Bool: static_cast<bool*>(base)[offset] = convert<bool>(v); break;
    case DType::BFloat16:
      static_cast<__nv_bfloat16*>(base)[offset] = convert<__nv_bfloat16>(v);
      break;
    case DType::UInt16: static_cast<uint16_t*>(base)[offset] = convert<uint16_t>(v); break;
    case DType::UInt32: static_cast<uint32_t*>(base)[offset] = convert<uint32_t>(v); break;
    case DType::UInt64: static_cast<uint64_t*>(base)[offset] = convert<uint64_t>(v); break;
    default: break;
  }
}

// ---- strided indexing ------------------------------------------------------------

/// Linear index -> element offsets of N operands over an iteration space of
/// `rank` dimensions (outermost first, innermost last). Passed to kernels by
/// value. Build it on the host with make_indexer (launch_util.cuh;
/// elementwise: operand 0 is the output, inputs broadcast with stride 0) or
/// fill it directly.
template <int N>
struct StridedIndexer {
  int rank = 0;
  int64_t sizes[kDeviceMaxRank] = {};
  int64_t strides[N][kDeviceMaxRank] = {};

  /// off[k] = element offset of operand k for linear index i (0 <= i < numel).
  __host__ __device__ inline void offsets(int64_t i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d > 0; --d) {
      int64_t size = sizes[d];
      int64_t q = i / size;
      int64_t r = i - q * size;
      i = q;
      for (int k = 0; k < N; ++k) off[k] += r * strides[k][d];
    }
    // What is left indexes the outermost dimension: no division (and none
    // at all for a rank-1 space).
    if (rank > 0) {
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][0];
    }
  }

  /// The same for i < 2^32 with 32-bit divisions (64-bit ones cost tens of
  /// instructions each on a GPU).
  __host__ __device__ inline void offsets32(uint32_t i, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d > 0; --d) {
      const uint32_t size = static_cast<uint32_t>(sizes[d]);
      const uint32_t q = i / size;
      const uint32_t r = i - q * size;
      i = q;
      for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(r) * strides[k][d];
    }
    if (rank > 0) {
      for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(i) * strides[k][0];
    }
  }
};

/// True when a space of `n` items can be walked with offsets32.
__host__ __device__ inline bool fits32(int64_t n) {
  return n <= int64_t{0xFFFFFFFF};
}

}  // namespace pterun::cuda
