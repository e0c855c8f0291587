#include "pterun/ops/quant_checks.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "pterun/core/error.h"
#include "pterun/core/half.h"

namespace pterun::ops {

namespace {

template <typename T>
T load(const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

/// The bits of the least positive float32 whose float32 reciprocal (rounded
/// to nearest) is finite, 2.938737e-39 (1 / FLT_MAX is just below it), and
/// of the largest finite float32: a float32 scale is usable when its bits,
/// as an integer, lie between them (valid_scale's rule, checked in
/// quant_checks_test.cpp).
constexpr int32_t kLeastScaleBits = 0x00200001;
constexpr int32_t kMostScaleBits = 0x7f7fffff;

double scale_at(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Float64: return load<double>(data, i);
    case DType::Float32: return load<float>(data, i);
    case DType::Float16: return static_cast<float>(load<Half>(data, i));
    case DType::BFloat16: return static_cast<float>(load<BFloat16>(data, i));
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

int64_t zero_point_at(const void* data, DType dtype, int64_t i) {
  return dtype == DType::Int32 ? load<int32_t>(data, i) : load<int64_t>(data, i);
}

}  // namespace

DType quant_dtype(int64_t number, const char* what, const char* op) {
  switch (number) {
    case static_cast<int64_t>(DType::UInt8): return DType::UInt8;
    case static_cast<int64_t>(DType::Int8): return DType::Int8;
    case static_cast<int64_t>(DType::Int16): return DType::Int16;
    case static_cast<int64_t>(DType::Int32): return DType::Int32;
    case static_cast<int64_t>(DType::UInt16): return DType::UInt16;
    case static_cast<int64_t>(DType::Bits16): return DType::Bits16;
    default: break;
  }
  throw_error(ErrorCode::InvalidArgument,
              str_cat(op, ": ", what, " ", number,
                      " is no quantized dtype (uint8, int8, int16, uint16 or int32)"));
}

DType float_dtype(int64_t number, const char* what, const char* op) {
  switch (number) {
    case static_cast<int64_t>(DType::Float16): return DType::Float16;
    case static_cast<int64_t>(DType::BFloat16): return DType::BFloat16;
    case static_cast<int64_t>(DType::Float32): return DType::Float32;
    case static_cast<int64_t>(DType::Float64): return DType::Float64;
    default: break;
  }
  throw_error(ErrorCode::InvalidArgument,
              str_cat(op, ": ", what, " ", number,
                      " is no floating dtype (float16, bfloat16, float32 or float64)"));
}

int64_t dtype_lowest(DType d) {
  switch (d) {
    case DType::Int8: return std::numeric_limits<int8_t>::min();
    case DType::Int16: return std::numeric_limits<int16_t>::min();
    case DType::Int32: return std::numeric_limits<int32_t>::min();
    case DType::Int64: return std::numeric_limits<int64_t>::min();
    default: return 0;
  }
}

int64_t dtype_highest(DType d) {
  switch (d) {
    case DType::UInt8: return std::numeric_limits<uint8_t>::max();
    case DType::Int8: return std::numeric_limits<int8_t>::max();
    case DType::Int16: return std::numeric_limits<int16_t>::max();
    case DType::UInt16:
    case DType::Bits16: return std::numeric_limits<uint16_t>::max();
    case DType::Int32: return std::numeric_limits<int32_t>::max();
    case DType::Int64: return std::numeric_limits<int64_t>::max();
    default: return 0;
  }
}

void check_quant_range(int64_t quant_min, int64_t quant_max, DType dtype, const char* op) {
  PTERUN_CHECK(quant_min <= quant_max, ErrorCode::InvalidArgument, op, ": quant_min ", quant_min,
               " is greater than quant_max ", quant_max);
  PTERUN_CHECK(quant_min >= dtype_lowest(dtype) && quant_max <= dtype_highest(dtype),
               ErrorCode::InvalidArgument, op, ": quant range [", quant_min, ", ", quant_max,
               "] exceeds ", dtype_name(dtype), "'s [", dtype_lowest(dtype), ", ",
               dtype_highest(dtype), "]");
}

bool valid_scale(double scale) {
  const float f = static_cast<float>(scale);
  return std::isfinite(scale) && scale > 0 && f > 0 && std::isfinite(f) && std::isfinite(1.0f / f);
}

void check_scale(double scale, const char* what, const char* op) {
  PTERUN_CHECK(valid_scale(scale), ErrorCode::InvalidArgument, op, ": ", what, " ", scale,
               " is not a usable quantization scale (it must be positive and finite, with a "
               "finite float32 reciprocal)");
}

void check_zero_point(int64_t zero_point, int64_t quant_min, int64_t quant_max, const char* what,
                      const char* op) {
  PTERUN_CHECK(zero_point >= quant_min && zero_point <= quant_max, ErrorCode::InvalidArgument, op,
               ": ", what, " ", zero_point, " lies outside the quant range [", quant_min, ", ",
               quant_max, "]");
}

void check_scales(const void* data, DType dtype, int64_t n, const char* op) {
  if (dtype == DType::Float32) {
    // valid_scale for float32 values, as one vector pass (the linear and
    // convolution kernels check their weight scales on every call): a
    // float32 scale is usable when positive, finite and with a finite
    // reciprocal. The loop below finds and names the first that is not.
    // Compared as the bits' integers, which flushing denormals to zero
    // leaves alone: a positive float's bits order as its value does, and a
    // negative one's (sign bit set) are negative integers.
    bool ok = true;
    const auto* f = static_cast<const float*>(data);
    const int32_t least_bits = kLeastScaleBits, max_bits = kMostScaleBits;
    auto usable = [&](int64_t i) {
      int32_t b;
      std::memcpy(&b, f + i, sizeof b);
      return (b >= least_bits) & (b <= max_bits);  // NaN's bits lie above infinity's
    };
    using M = int32_t __attribute__((vector_size(64)));
    const M lo = M{} + least_bits, hi = M{} + max_bits;
    M bad = {};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      M v;
      std::memcpy(&v, f + i, sizeof v);
      bad |= ~((v >= lo) & (v <= hi));
    }
    for (int j = 0; j < 16; ++j) ok &= bad[j] == 0;
    for (; i < n; ++i) ok &= usable(i);
    if (ok) return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double s = scale_at(data, dtype, i);
    if (!valid_scale(s)) [[unlikely]] {
      check_scale(s, str_cat("scales[", i, "]").c_str(), op);
    }
  }
}

void check_zero_points(const void* data, DType dtype, int64_t n, int64_t quant_min,
                       int64_t quant_max, const char* op) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t z = zero_point_at(data, dtype, i);
    if (z < quant_min || z > quant_max) [[unlikely]] {
      check_zero_point(z, quant_min, quant_max, str_cat("zero_points[", i, "]").c_str(), op);
    }
  }
}

bool all_zero(const void* data, DType dtype, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (zero_point_at(data, dtype, i) != 0) return false;
  }
  return true;
}

}  // namespace pterun::ops
