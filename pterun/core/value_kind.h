#pragma once

#include <cstdint>

namespace pterun {

/// The kinds of values in a method's value table (docs/format.md, "Value kinds").
enum class ValueKind : uint8_t {
  None,
  Int,
  Bool,
  Double,
  Tensor,
  String,
  IntList,
  DoubleList,
  BoolList,
  TensorList,
  OptionalTensorList,
};

/// "Int", "TensorList" ...
const char* value_kind_name(ValueKind kind);

/// How a tensor's shape may change at run time.
enum class ShapeDynamism : uint8_t { Static = 0, DynamicBound = 1, DynamicUnbound = 2 };

/// "static", "dynamic_bound", "dynamic_unbound".
const char* shape_dynamism_name(ShapeDynamism d);

}  // namespace pterun
