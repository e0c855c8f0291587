#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/core/value_kind.h"

namespace pterun {

/// One entry of a method's value table, as kernels see it. The executor
/// builds values once at load; kernels read their arguments and write their
/// results through these accessors. A wrong kind is Error InvalidType.
class Value {
 public:
  Value() = default;

  ValueKind kind() const { return kind_; }
  bool is_none() const { return kind_ == ValueKind::None; }
  bool is_tensor() const { return kind_ == ValueKind::Tensor; }

  // Scalars.
  int64_t to_int() const;
  double to_double() const;  // Double, or Int converted
  bool to_bool() const;
  Scalar to_scalar() const;  // Int, Double or Bool
  std::string_view to_string() const;
  std::optional<int64_t> to_optional_int() const;
  std::optional<Scalar> to_optional_scalar() const;

  // Tensors.
  Tensor& to_tensor() const;
  /// The tensor, or nullptr for None.
  Tensor* to_optional_tensor() const;

  // Lists. int lists are read at call time from the boxed Int values they
  // name, so sizes computed by earlier instructions flow in.
  std::span<const int64_t> to_int_list() const;
  /// nullopt for None.
  std::optional<std::span<const int64_t>> to_optional_int_list() const;
  std::span<const double> to_double_list() const;
  std::span<const uint8_t> to_bool_list() const;
  std::span<Tensor* const> to_tensor_list() const;
  /// Entries are nullptr for None.
  std::span<Tensor* const> to_optional_tensor_list() const;

  // Results written by kernels (prim ops, sym_size ...). The kind stays.
  void set_int(int64_t v);
  void set_double(double v);
  void set_bool(bool v);
  /// Stores `s` keeping this value's kind (Int / Double / Bool); a
  /// mismatching kind converts as Python would (int(), float(), bool()).
  void set_scalar(const Scalar& s);

  // Construction, by the executor.
  static Value none() { return Value(); }
  static Value from_int(int64_t v);
  static Value from_double(double v);
  static Value from_bool(bool v);
  static Value from_string(std::string_view s);
  static Value from_tensor(Tensor* t);
  static Value from_int_list(std::span<Value* const> boxed);
  static Value from_double_list(std::span<const double> items);
  static Value from_bool_list(std::span<const uint8_t> items);
  static Value from_tensor_list(std::span<Tensor* const> items, bool optional);

 private:
  [[noreturn]] void wrong_kind(const char* expected) const;

  ValueKind kind_ = ValueKind::None;
  union {
    int64_t int_ = 0;
    double double_;
    bool bool_;
  };
  Tensor* tensor_ = nullptr;
  std::string_view string_;
  std::span<Value* const> boxed_ints_;
  mutable std::vector<int64_t> int_cache_;
  std::span<const double> doubles_;
  std::span<const uint8_t> bools_;
  std::span<Tensor* const> tensors_;
};

}  // namespace pterun
