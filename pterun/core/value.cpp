#include "pterun/core/value.h"

#include "pterun/core/error.h"

namespace pterun {

void Value::wrong_kind(const char* expected) const {
  throw_error(ErrorCode::InvalidType,
              str_cat("argument is a ", value_kind_name(kind_), ", expected ", expected));
}

int64_t Value::to_int() const {
  if (kind_ != ValueKind::Int) wrong_kind("an Int");
  return int_;
}

double Value::to_double() const {
  if (kind_ == ValueKind::Double) return double_;
  if (kind_ == ValueKind::Int) return static_cast<double>(int_);
  wrong_kind("a Double");
}

bool Value::to_bool() const {
  if (kind_ != ValueKind::Bool) wrong_kind("a Bool");
  return bool_;
}

Scalar Value::to_scalar() const {
  switch (kind_) {
    case ValueKind::Int: return Scalar::from_int(int_);
    case ValueKind::Double: return Scalar::from_double(double_);
    case ValueKind::Bool: return Scalar::from_bool(bool_);
    default: wrong_kind("a Scalar (Int, Double or Bool)");
  }
}

std::string_view Value::to_string() const {
  if (kind_ != ValueKind::String) wrong_kind("a String");
  return string_;
}

std::optional<int64_t> Value::to_optional_int() const {
  if (kind_ == ValueKind::None) return std::nullopt;
  return to_int();
}

std::optional<Scalar> Value::to_optional_scalar() const {
  if (kind_ == ValueKind::None) return std::nullopt;
  return to_scalar();
}

Tensor& Value::to_tensor() const {
  if (kind_ != ValueKind::Tensor) wrong_kind("a Tensor");
  return *tensor_;
}

Tensor* Value::to_optional_tensor() const {
  if (kind_ == ValueKind::None) return nullptr;
  return &to_tensor();
}

std::span<const int64_t> Value::to_int_list() const {
  if (kind_ != ValueKind::IntList) wrong_kind("an IntList");
  for (size_t i = 0; i < boxed_ints_.size(); ++i) int_cache_[i] = boxed_ints_[i]->to_int();
  return int_cache_;
}

std::optional<std::span<const int64_t>> Value::to_optional_int_list() const {
  if (kind_ == ValueKind::None) return std::nullopt;
  return to_int_list();
}

std::span<const double> Value::to_double_list() const {
  if (kind_ != ValueKind::DoubleList) wrong_kind("a DoubleList");
  return doubles_;
}

std::span<const uint8_t> Value::to_bool_list() const {
  if (kind_ != ValueKind::BoolList) wrong_kind("a BoolList");
  return bools_;
}

std::span<Tensor* const> Value::to_tensor_list() const {
  if (kind_ != ValueKind::TensorList) wrong_kind("a TensorList");
  return tensors_;
}

std::span<Tensor* const> Value::to_optional_tensor_list() const {
  if (kind_ != ValueKind::OptionalTensorList && kind_ != ValueKind::TensorList) {
    wrong_kind("an OptionalTensorList");
  }
  return tensors_;
}

void Value::set_int(int64_t v) {
  if (kind_ != ValueKind::Int) wrong_kind("an Int");
  int_ = v;
}

void Value::set_double(double v) {
  if (kind_ != ValueKind::Double) wrong_kind("a Double");
  double_ = v;
}

void Value::set_bool(bool v) {
  if (kind_ != ValueKind::Bool) wrong_kind("a Bool");
  bool_ = v;
}

void Value::set_scalar(const Scalar& s) {
  switch (kind_) {
    case ValueKind::Int: int_ = s.to_int(); break;
    case ValueKind::Double: double_ = s.to_double(); break;
    case ValueKind::Bool: bool_ = s.is_floating() ? s.to_double() != 0 : s.to_int() != 0; break;
    default: wrong_kind("an Int, Double or Bool result");
  }
}

Value Value::from_int(int64_t v) {
  Value out;
  out.kind_ = ValueKind::Int;
  out.int_ = v;
  return out;
}

Value Value::from_double(double v) {
  Value out;
  out.kind_ = ValueKind::Double;
  out.double_ = v;
  return out;
}

Value Value::from_bool(bool v) {
  Value out;
  out.kind_ = ValueKind::Bool;
  out.bool_ = v;
  return out;
}

Value Value::from_string(std::string_view s) {
  Value out;
  out.kind_ = ValueKind::String;
  out.string_ = s;
  return out;
}

Value Value::from_tensor(Tensor* t) {
  Value out;
  out.kind_ = ValueKind::Tensor;
  out.tensor_ = t;
  return out;
}

Value Value::from_int_list(std::span<Value* const> boxed) {
  Value out;
  out.kind_ = ValueKind::IntList;
  out.boxed_ints_ = boxed;
  out.int_cache_.resize(boxed.size());
  return out;
}

Value Value::from_double_list(std::span<const double> items) {
  Value out;
  out.kind_ = ValueKind::DoubleList;
  out.doubles_ = items;
  return out;
}

Value Value::from_bool_list(std::span<const uint8_t> items) {
  Value out;
  out.kind_ = ValueKind::BoolList;
  out.bools_ = items;
  return out;
}

Value Value::from_tensor_list(std::span<Tensor* const> items, bool optional) {
  Value out;
  out.kind_ = optional ? ValueKind::OptionalTensorList : ValueKind::TensorList;
  out.tensors_ = items;
  return out;
}

}  // namespace pterun
