#pragma once

// Small helpers of the CPU elementwise compute (unary, compare).

#include "pterun/core/tensor.h"

namespace pterun::kernels {

/// `t`'s storage seen as the unsigned integer dtype of the same width
/// (bool -> uint8, float32 -> uint32 ...): same shape, dim order and data.
/// Lets selects move bit patterns and lets bool data take the uint8 paths,
/// which GCC vectorises (it does not vectorise bool negation or
/// bool -> float conversion).
inline Tensor bits_view(const Tensor& t) {
  DType as = t.element_size() == 1   ? DType::UInt8
             : t.element_size() == 2 ? DType::UInt16
             : t.element_size() == 4 ? DType::UInt32
                                     : DType::UInt64;
  Tensor view(as, t.sizes(), t.dim_order());
  view.set_data(t.data(), t.nbytes());
  return view;
}

}  // namespace pterun::kernels
