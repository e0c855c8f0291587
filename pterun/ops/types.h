#pragma once

// The parameter types of operator front-ends: what each kind of argument
// of an ExecuTorch operator schema is read as (see unbox.h).

#include <cstdint>
#include <span>

#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/kernels/kernel.h"

namespace pterun::ops {

using kernels::KernelContext;
using Args = std::span<Value* const>;

using IntList = std::span<const int64_t>;
using DoubleList = std::span<const double>;
using BoolList = std::span<const uint8_t>;
using TensorList = std::span<Tensor* const>;
/// A Tensor?[] argument: entries are nullptr for None.
struct OptionalTensorList : std::span<Tensor* const> {
  using span::span;
  explicit OptionalTensorList(std::span<Tensor* const> s) : span(s) {}
};

}  // namespace pterun::ops
