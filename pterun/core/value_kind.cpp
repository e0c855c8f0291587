#include "pterun/core/value_kind.h"

namespace pterun {

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::None: return "None";
    case ValueKind::Int: return "Int";
    case ValueKind::Bool: return "Bool";
    case ValueKind::Double: return "Double";
    case ValueKind::Tensor: return "Tensor";
    case ValueKind::String: return "String";
    case ValueKind::IntList: return "IntList";
    case ValueKind::DoubleList: return "DoubleList";
    case ValueKind::BoolList: return "BoolList";
    case ValueKind::TensorList: return "TensorList";
    case ValueKind::OptionalTensorList: return "OptionalTensorList";
  }
  return "Unknown";
}

const char* shape_dynamism_name(ShapeDynamism d) {
  switch (d) {
    case ShapeDynamism::Static: return "static";
    case ShapeDynamism::DynamicBound: return "dynamic_bound";
    case ShapeDynamism::DynamicUnbound: return "dynamic_unbound";
  }
  return "unknown";
}

}  // namespace pterun
