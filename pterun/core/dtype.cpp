#include "pterun/core/dtype.h"

#include <algorithm>
#include <array>

namespace pterun {
namespace {

struct DTypeInfo {
  DType dtype;
  size_t size;
  std::string_view name;
};

constexpr std::array kDTypes = {
    DTypeInfo{DType::UInt8, 1, "uint8"},
    DTypeInfo{DType::Int8, 1, "int8"},
    DTypeInfo{DType::Int16, 2, "int16"},
    DTypeInfo{DType::Int32, 4, "int32"},
    DTypeInfo{DType::Int64, 8, "int64"},
    DTypeInfo{DType::Float16, 2, "float16"},
    DTypeInfo{DType::Float32, 4, "float32"},
    DTypeInfo{DType::Float64, 8, "float64"},
    DTypeInfo{DType::Complex32, 4, "complex32"},
    DTypeInfo{DType::Complex64, 8, "complex64"},
    DTypeInfo{DType::Complex128, 16, "complex128"},
    DTypeInfo{DType::Bool, 1, "bool"},
    DTypeInfo{DType::QInt8, 1, "qint8"},
    DTypeInfo{DType::QUInt8, 1, "quint8"},
    DTypeInfo{DType::QInt32, 4, "qint32"},
    DTypeInfo{DType::BFloat16, 2, "bfloat16"},
    DTypeInfo{DType::QUInt4x2, 1, "quint4x2"},
    DTypeInfo{DType::QUInt2x4, 1, "quint2x4"},
    DTypeInfo{DType::Bits16, 2, "bits16"},
    DTypeInfo{DType::Float8E5M2, 1, "float8_e5m2"},
    DTypeInfo{DType::Float8E4M3FN, 1, "float8_e4m3fn"},
    DTypeInfo{DType::Float8E5M2FNUZ, 1, "float8_e5m2fnuz"},
    DTypeInfo{DType::Float8E4M3FNUZ, 1, "float8_e4m3fnuz"},
    DTypeInfo{DType::UInt16, 2, "uint16"},
    DTypeInfo{DType::UInt32, 4, "uint32"},
    DTypeInfo{DType::UInt64, 8, "uint64"},
};

// element_size() keeps its own table; both must agree.
static_assert(std::ranges::all_of(kDTypes, [](const DTypeInfo& i) {
  return element_size(i.dtype) == i.size;
}));

const DTypeInfo* find_info(DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

std::optional<DType> dtype_from_number(int number) {
  for (const auto& info : kDTypes) {
    if (static_cast<int>(info.dtype) == number) return info.dtype;
  }
  return std::nullopt;
}

std::string_view dtype_name(DType dtype) {
  const DTypeInfo* info = find_info(dtype);
  return info ? info->name : "invalid";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

}  // namespace pterun
