#pragma once

// Dtype dispatch and the type-promotion rules (docs/operators.md, "Type
// promotion"), shared by every backend.

#include <cstdint>
#include <type_traits>

#include "pterun/core/dtype.h"
#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/core/math.h"
#include "pterun/core/scalar.h"
#include "pterun/kernels/common/dtype_visit.h"

namespace pterun::kernels {

/// C++ storage type of a dtype.
template <DType D>
struct StorageOf;
template <>
struct StorageOf<DType::UInt8> {
  using type = uint8_t;
};
template <>
struct StorageOf<DType::Int8> {
  using type = int8_t;
};
template <>
struct StorageOf<DType::Int16> {
  using type = int16_t;
};
template <>
struct StorageOf<DType::Int32> {
  using type = int32_t;
};
template <>
struct StorageOf<DType::Int64> {
  using type = int64_t;
};
template <>
struct StorageOf<DType::Float16> {
  using type = Half;
};
template <>
struct StorageOf<DType::Float32> {
  using type = float;
};
template <>
struct StorageOf<DType::Float64> {
  using type = double;
};
template <>
struct StorageOf<DType::Bool> {
  using type = bool;
};
template <>
struct StorageOf<DType::BFloat16> {
  using type = BFloat16;
};
template <>
struct StorageOf<DType::UInt16> {
  using type = uint16_t;
};
template <>
struct StorageOf<DType::UInt32> {
  using type = uint32_t;
};
template <>
struct StorageOf<DType::UInt64> {
  using type = uint64_t;
};

/// The dtype of a C++ storage type.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::UInt8;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::Int8;
}
template <>
constexpr DType dtype_of<int16_t>() {
  return DType::Int16;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::Int32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::Int64;
}
template <>
constexpr DType dtype_of<Half>() {
  return DType::Float16;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::Float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::Float64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}
template <>
constexpr DType dtype_of<BFloat16>() {
  return DType::BFloat16;
}
template <>
constexpr DType dtype_of<uint16_t>() {
  return DType::UInt16;
}
template <>
constexpr DType dtype_of<uint32_t>() {
  return DType::UInt32;
}
template <>
constexpr DType dtype_of<uint64_t>() {
  return DType::UInt64;
}

/// Dtype families, ExecuTorch's names: REAL = u8 i8 i16 i32 i64 f32 f64;
/// H = +f16; BF16 = +bf16; B = +bool.
enum class Family { Real, RealH, RealHBF16, RealHBBF16, FloatHBF16, All };

bool in_family(DType d, Family f);
bool is_floating(DType d);  // f16 bf16 f32 f64
bool is_integral(DType d, bool include_bool);
bool is_complex(DType d);

/// Calls `f.template operator()<T>()` with T the storage type of `d`, for
/// any dtype of `family`; Error InvalidArgument naming `op` otherwise.
template <typename F>
decltype(auto) visit(DType d, Family family, const char* op, F&& f) {
  if (!in_family(d, family)) RefuseUnsupported::refuse(op, d);
  return visit_storage<HostTypes, VisitSet::Any, RefuseUnsupported>(d, op, f);
}

/// The type arithmetic runs in for storage type T: float for f16/bf16.
template <typename T>
using ComputeOf =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

/// The dtype two tensor operands combine in (docs/operators.md, "Type
/// promotion"). Error InvalidArgument naming `op` for combinations it refuses.
DType promote_types(DType a, DType b, const char* op);

/// The dtype a tensor and a Scalar combine in (docs/operators.md, "Tensor
/// with a Scalar").
DType promote_with_scalar(DType tensor, const Scalar& s);

/// canCast(from, to): everything but complex->real, float->integral,
/// non-bool->bool.
bool can_cast(DType from, DType to);

/// Error InvalidArgument unless can_cast(common, out).
void check_can_cast(DType common, DType out, const char* op);

/// Converts between storage / compute types (float<->Half etc.), with
/// float->integer going through int64 (docs/operators.md, "Conversions").
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else {
    return ::pterun::math::convert_standard<To>(v);
  }
}

}  // namespace pterun::kernels
