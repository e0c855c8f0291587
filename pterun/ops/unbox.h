#pragma once

// Typed unboxing: an operator front-end is an ordinary function with typed
// parameters,
//
//   void native_layer_norm_out(KernelContext& ctx, const Tensor& in, IntList normalized_shape,
//                              const Tensor* weight, const Tensor* bias, double eps,
//                              Tensor& out, Tensor& mean, Tensor& rstd);
//
// and Boxed<&native_layer_norm_out> turns it into a KernelFn that reads its
// arguments from an instruction's values. The parameter types decide which
// accessor reads each argument and which value kinds the loader accepts for
// it, so an argument-index mistake cannot compile and an instruction with
// too few or wrongly-kinded arguments is refused at load.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/core/value_kind.h"
#include "pterun/kernels/kernel.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

constexpr uint16_t kind_bit(ValueKind k) {
  return static_cast<uint16_t>(1u << static_cast<unsigned>(k));
}
inline constexpr uint16_t kAnyKind = 0xFFFF;

/// How a parameter of type P is read from its Value, and which kinds it takes.
template <typename P>
struct Unbox {
  static_assert(sizeof(P) == 0, "no unboxing for this parameter type");
};

template <>
struct Unbox<const Tensor&> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Tensor);
  static const Tensor& get(const Value& v) { return v.to_tensor(); }
};
template <>
struct Unbox<Tensor&> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Tensor);
  static Tensor& get(const Value& v) { return v.to_tensor(); }
};
template <>
struct Unbox<const Tensor*> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Tensor) | kind_bit(ValueKind::None);
  static const Tensor* get(const Value& v) { return v.to_optional_tensor(); }
};
template <>
struct Unbox<Tensor*> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Tensor) | kind_bit(ValueKind::None);
  static Tensor* get(const Value& v) { return v.to_optional_tensor(); }
};
template <>
struct Unbox<int64_t> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Int);
  static int64_t get(const Value& v) { return v.to_int(); }
};
template <>
struct Unbox<std::optional<int64_t>> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Int) | kind_bit(ValueKind::None);
  static std::optional<int64_t> get(const Value& v) { return v.to_optional_int(); }
};
template <>
struct Unbox<double> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Double) | kind_bit(ValueKind::Int);
  static double get(const Value& v) { return v.to_double(); }
};
template <>
struct Unbox<std::optional<double>> {
  static constexpr uint16_t kKinds =
      kind_bit(ValueKind::Double) | kind_bit(ValueKind::Int) | kind_bit(ValueKind::None);
  static std::optional<double> get(const Value& v) {
    if (v.is_none()) return std::nullopt;
    return v.to_double();
  }
};
template <>
struct Unbox<bool> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Bool);
  static bool get(const Value& v) { return v.to_bool(); }
};
template <>
struct Unbox<std::optional<bool>> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::Bool) | kind_bit(ValueKind::None);
  static std::optional<bool> get(const Value& v) {
    if (v.is_none()) return std::nullopt;
    return v.to_bool();
  }
};
template <>
struct Unbox<Scalar> {
  static constexpr uint16_t kKinds =
      kind_bit(ValueKind::Int) | kind_bit(ValueKind::Double) | kind_bit(ValueKind::Bool);
  static Scalar get(const Value& v) { return v.to_scalar(); }
};
template <>
struct Unbox<std::optional<Scalar>> {
  static constexpr uint16_t kKinds = Unbox<Scalar>::kKinds | kind_bit(ValueKind::None);
  static std::optional<Scalar> get(const Value& v) { return v.to_optional_scalar(); }
};
template <>
struct Unbox<std::string_view> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::String);
  static std::string_view get(const Value& v) { return v.to_string(); }
};
template <>
struct Unbox<std::optional<std::string_view>> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::String) | kind_bit(ValueKind::None);
  static std::optional<std::string_view> get(const Value& v) {
    if (v.is_none()) return std::nullopt;
    return v.to_string();
  }
};
template <>
struct Unbox<IntList> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::IntList);
  static IntList get(const Value& v) { return v.to_int_list(); }
};
template <>
struct Unbox<std::optional<IntList>> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::IntList) | kind_bit(ValueKind::None);
  static std::optional<IntList> get(const Value& v) { return v.to_optional_int_list(); }
};
template <>
struct Unbox<DoubleList> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::DoubleList);
  static DoubleList get(const Value& v) { return v.to_double_list(); }
};
template <>
struct Unbox<BoolList> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::BoolList);
  static BoolList get(const Value& v) { return v.to_bool_list(); }
};
template <>
struct Unbox<TensorList> {
  static constexpr uint16_t kKinds = kind_bit(ValueKind::TensorList);
  static TensorList get(const Value& v) { return v.to_tensor_list(); }
};
template <>
struct Unbox<OptionalTensorList> {
  static constexpr uint16_t kKinds =
      kind_bit(ValueKind::OptionalTensorList) | kind_bit(ValueKind::TensorList);
  static OptionalTensorList get(const Value& v) {
    return OptionalTensorList(v.to_optional_tensor_list());
  }
};
/// Any value, read by the front-end itself (prim ops' results, arguments
/// whose kind decides the overload).
template <>
struct Unbox<const Value&> {
  static constexpr uint16_t kKinds = kAnyKind;
  static const Value& get(const Value& v) { return v; }
};
template <>
struct Unbox<Value&> {
  static constexpr uint16_t kKinds = kAnyKind;
  static Value& get(Value& v) { return v; }
};

/// The KernelFn of a typed front-end `Fn(KernelContext&, P...)`: reads
/// argument i as P_i and calls Fn. The loader guarantees that an
/// instruction passes at least kArity arguments of the kinds in kKinds.
template <auto Fn>
struct Boxed;

template <typename... P, void (*Fn)(KernelContext&, P...)>
struct Boxed<Fn> {
  static constexpr size_t kArity = sizeof...(P);
  static_assert(kArity < 32, "too many parameters");
  static constexpr std::array<uint16_t, kArity> kKinds{Unbox<P>::kKinds...};

  static void call(KernelContext& ctx, Args args) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      Fn(ctx, Unbox<P>::get(*args[I])...);
    }
    (std::index_sequence_for<P...>{});
  }
};

}  // namespace pterun::ops
