#include "pterun/kernels/common/dtype_util.h"

namespace pterun::kernels {
namespace {

bool is_unsigned_small(DType d) {
  return d == DType::UInt8;
}

int int_width(DType d) {
  switch (d) {
    case DType::UInt8:
    case DType::Int8: return 1;
    case DType::Int16: return 2;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    default: return 0;
  }
}

// Float precision rank used when mixing with complex types.
int float_rank(DType d) {
  switch (d) {
    case DType::Float16: return 1;
    case DType::BFloat16:
    case DType::Float32: return 2;
    case DType::Float64: return 3;
    case DType::Complex32: return 1;
    case DType::Complex64: return 2;
    case DType::Complex128: return 3;
    default: return 0;
  }
}

bool is_promotable(DType d) {
  return int_width(d) > 0 || is_floating(d) || is_complex(d) || d == DType::Bool;
}

}  // namespace

bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

bool is_integral(DType d, bool include_bool) {
  return int_width(d) > 0 || d == DType::UInt16 || d == DType::UInt32 || d == DType::UInt64 ||
         (include_bool && d == DType::Bool);
}

bool is_complex(DType d) {
  return d == DType::Complex32 || d == DType::Complex64 || d == DType::Complex128;
}

bool in_family(DType d, Family f) {
  bool real = int_width(d) > 0 || d == DType::Float32 || d == DType::Float64;
  switch (f) {
    case Family::Real: return real;
    case Family::RealH: return real || d == DType::Float16;
    case Family::RealHBF16: return real || d == DType::Float16 || d == DType::BFloat16;
    case Family::RealHBBF16:
      return real || d == DType::Float16 || d == DType::BFloat16 || d == DType::Bool;
    case Family::FloatHBF16: return is_floating(d);
    case Family::All:
      return real || d == DType::Float16 || d == DType::BFloat16 || d == DType::Bool ||
             d == DType::UInt16 || d == DType::UInt32 || d == DType::UInt64;
  }
  return false;
}

DType promote_types(DType a, DType b, const char* op) {
  if (a == b) return a;
  PTERUN_CHECK(is_promotable(a) && is_promotable(b), ErrorCode::InvalidArgument, op,
               ": cannot combine ", dtype_name(a), " with ", dtype_name(b));
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_complex(a) || is_complex(b)) {
    int rank = std::max(float_rank(a), float_rank(b));
    return rank <= 1 ? DType::Complex32 : rank == 2 ? DType::Complex64 : DType::Complex128;
  }
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
    return DType::Float32;  // f16+bf16, or either with f32
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral.
  if (is_unsigned_small(a) && b == DType::Int8) return DType::Int16;
  if (is_unsigned_small(b) && a == DType::Int8) return DType::Int16;
  if (is_unsigned_small(a)) return b;
  if (is_unsigned_small(b)) return a;
  return int_width(a) >= int_width(b) ? a : b;
}

DType promote_with_scalar(DType tensor, const Scalar& s) {
  if (is_complex(tensor)) return tensor;
  if (s.is_floating()) return is_floating(tensor) ? tensor : DType::Float32;
  if (s.is_integral()) return tensor == DType::Bool ? DType::Int64 : tensor;
  return tensor;
}

bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

void check_can_cast(DType common, DType out, const char* op) {
  PTERUN_CHECK(can_cast(common, out), ErrorCode::InvalidArgument, op, ": cannot store a ",
               dtype_name(common), " result in a ", dtype_name(out), " output");
}

}  // namespace pterun::kernels
