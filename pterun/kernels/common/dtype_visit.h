#pragma once

// Dtype dispatch written once for both backends: a dtype read at run time
// becomes a template argument. The types that stand for float16 and
// bfloat16 are a parameter (HostTypes here; the CUDA backend passes the
// CUDA types), and so is how a dtype outside the visited set is refused.
// Host code only; nvcc compiles it for the CUDA backend's launch code.

#include <cstdint>

#include "pterun/core/dtype.h"
#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/core/str_cat.h"

namespace pterun::kernels {

/// The host's 16-bit floating types.
struct HostTypes {
  using Half = ::pterun::Half;
  using BFloat16 = ::pterun::BFloat16;
};

/// Which dtypes a visitor instantiates its callable for.
enum class VisitSet {
  Any,          // every dtype with a storage type
  Elementwise,  // u8 i8 i16 i32 i64 f16 bf16 f32 f64 bool
  Floating,     // f16 bf16 f32 f64
};

constexpr bool visits(VisitSet s, DType d) {
  switch (s) {
    case VisitSet::Any: return true;
    case VisitSet::Floating:
      return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 ||
             d == DType::Float64;
    case VisitSet::Elementwise:
      return d != DType::UInt16 && d != DType::UInt32 && d != DType::UInt64;
  }
  return false;
}

/// Refusals: each has a static [[noreturn]] refuse(op, dtype).
struct RefuseUnsupported {  // a dtype the caller does not accept
  [[noreturn]] static void refuse(const char* op, DType d) {
    throw_error(ErrorCode::InvalidArgument,
                str_cat(op, ": dtype ", dtype_name(d), " is not supported"));
  }
};
struct RefuseUnexpected {  // a dtype the front-end has already ruled out
  [[noreturn]] static void refuse(const char* op, DType d) {
    throw_error(ErrorCode::Internal, str_cat(op, ": unexpected dtype ", dtype_name(d)));
  }
};

/// Calls `f.template operator()<T>()` with T the storage type of `d` (f16
/// and bf16 as `Types` names them) when `d` is in `S`; Refuse::refuse(op, d)
/// otherwise. One switch: the compiler makes it a jump table.
template <typename Types, VisitSet S, typename Refuse, typename F>
decltype(auto) visit_storage(DType d, const char* op, F&& f) {
#define PTERUN_VISIT_CASE(D, T)                                           \
  case DType::D:                                                          \
    if constexpr (visits(S, DType::D)) return f.template operator()<T>(); \
    break
  switch (d) {
    PTERUN_VISIT_CASE(UInt8, uint8_t);
    PTERUN_VISIT_CASE(Int8, int8_t);
    PTERUN_VISIT_CASE(Int16, int16_t);
    PTERUN_VISIT_CASE(Int32, int32_t);
    PTERUN_VISIT_CASE(Int64, int64_t);
    PTERUN_VISIT_CASE(Float16, typename Types::Half);
    PTERUN_VISIT_CASE(Float32, float);
    PTERUN_VISIT_CASE(Float64, double);
    PTERUN_VISIT_CASE(Bool, bool);
    PTERUN_VISIT_CASE(BFloat16, typename Types::BFloat16);
    PTERUN_VISIT_CASE(UInt16, uint16_t);
    PTERUN_VISIT_CASE(UInt32, uint32_t);
    PTERUN_VISIT_CASE(UInt64, uint64_t);
    default: break;
  }
#undef PTERUN_VISIT_CASE
  Refuse::refuse(op, d);
}

/// visit_storage over the floating dtypes, for callers whose front-end has
/// already refused the others (Error Internal naming `op`).
template <typename Types, typename F>
void visit_floating(DType d, const char* op, F&& f) {
  visit_storage<Types, VisitSet::Floating, RefuseUnexpected>(d, op, f);
}

/// Calls `f.template operator()<T>()` with T the storage type of a
/// quantized integer dtype (u8 i8 i16 u16/bits16 i32); Error Internal
/// naming `op` otherwise.
template <typename F>
void visit_quant_int(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::Int8: return f.template operator()<int8_t>();
    case DType::Int16: return f.template operator()<int16_t>();
    case DType::UInt16:
    case DType::Bits16: return f.template operator()<uint16_t>();
    case DType::Int32: return f.template operator()<int32_t>();
    default: break;
  }
  throw_error(ErrorCode::Internal, str_cat(op, ": unexpected integer dtype ", dtype_name(d)));
}

/// The same for the 8-bit quantized dtypes: uint8_t for UInt8, else int8_t.
template <typename F>
void visit_q8(DType d, F&& f) {
  if (d == DType::UInt8) {
    f.template operator()<uint8_t>();
  } else {
    f.template operator()<int8_t>();
  }
}

}  // namespace pterun::kernels
