#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace pterun {

/// Element types, numbered as ExecuTorch's ScalarType (and c10::ScalarType).
enum class DType : int8_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Float16 = 5,
  Float32 = 6,
  Float64 = 7,
  Complex32 = 8,
  Complex64 = 9,
  Complex128 = 10,
  Bool = 11,
  QInt8 = 12,
  QUInt8 = 13,
  QInt32 = 14,
  BFloat16 = 15,
  QUInt4x2 = 16,
  QUInt2x4 = 17,
  Bits16 = 22,
  Float8E5M2 = 23,
  Float8E4M3FN = 24,
  Float8E5M2FNUZ = 25,
  Float8E4M3FNUZ = 26,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
};

/// The DType with ScalarType number `number`, or nullopt for numbers that
/// name no element type pterun accepts (the bit-packed 18..21, negatives,
/// 30 and above).
std::optional<DType> dtype_from_number(int number);

/// Bytes per element; 0 for numbers that name no DType. A table lookup:
/// it runs several times per kernel call.
constexpr size_t element_size(DType dtype) {
  // Indexed by ScalarType number (18..21, the bit-packed types, are 0).
  constexpr uint8_t kSizes[] = {1, 1, 2, 4, 8, 2, 4, 8, 4, 8, 16, 1, 1, 1, 4,
                                2, 1, 1, 0, 0, 0, 0, 2, 1, 1, 1,  1, 2, 4, 8};
  const auto i = static_cast<uint8_t>(dtype);
  return i < sizeof kSizes ? kSizes[i] : 0;
}

/// A set of dtypes: bit n stands for ScalarType number n.
class DTypeSet {
 public:
  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> dtypes) {
    for (DType d : dtypes) bits_ |= bit(d);
  }
  /// Every dtype.
  static constexpr DTypeSet all() {
    DTypeSet s;
    s.bits_ = ~uint32_t{0};
    return s;
  }
  constexpr bool contains(DType d) const { return (bits_ & bit(d)) != 0; }
  constexpr bool operator==(const DTypeSet&) const = default;

 private:
  static constexpr uint32_t bit(DType d) {
    const auto n = static_cast<uint8_t>(d);
    return n < 32 ? uint32_t{1} << n : 0;
  }
  uint32_t bits_ = 0;
};

/// NumPy-style name: "float32", "bfloat16", "complex64", "bool" ...
std::string_view dtype_name(DType dtype);

/// The DType called `name` (as dtype_name spells it), or nullopt.
std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace pterun
