#pragma once

#include <cstdint>

namespace pterun {

/// A number argument of an operator (ExecuTorch's Scalar): bool, int64 or
/// double, keeping which it is, since type promotion depends on it.
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Double };

  Scalar() : kind_(Kind::Int), i_(0) {}
  static Scalar from_bool(bool b) {
    Scalar s;
    s.kind_ = Kind::Bool;
    s.i_ = b ? 1 : 0;
    return s;
  }
  static Scalar from_int(int64_t i) {
    Scalar s;
    s.kind_ = Kind::Int;
    s.i_ = i;
    return s;
  }
  static Scalar from_double(double d) {
    Scalar s;
    s.kind_ = Kind::Double;
    s.d_ = d;
    return s;
  }

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Double; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  /// The value converted to T (double truncates toward zero for integers).
  template <typename T>
  T to() const {
    return kind_ == Kind::Double ? static_cast<T>(d_) : static_cast<T>(i_);
  }
  double to_double() const { return kind_ == Kind::Double ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Double ? static_cast<int64_t>(d_) : i_; }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace pterun
