#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "pterun/core/dtype.h"
#include "pterun/core/value_kind.h"
#include "pterun/kernels/kernel.h"

namespace pterun {

/// One caller-supplied input of a method call: a tensor view of the
/// caller's memory, or a number, string or None.
struct InputArg {
  ValueKind kind = ValueKind::None;  // Tensor, Int, Double, Bool, String or None

  // Tensor: memory the caller keeps valid while `keep_alive` lives, on the
  // host or (device CUDA) on GPU `device_index`. Device memory is ready when
  // the input is set, or, with `after_stream`, once the work queued so far
  // on the producer's stream `stream` (a cudaStream_t of that GPU as an
  // integer: 0 the null stream, 1 the legacy and 2 the per-thread default
  // stream, as in DLPack) is done: the method orders its reads after it
  // without a host wait when the memory is on its own GPU (docs/python-api.md, B19).
  const void* data = nullptr;
  Device device = Device::CPU;
  int device_index = 0;
  bool after_stream = false;
  uintptr_t stream = 0;
  DType dtype = DType::Float32;
  std::span<const int64_t> sizes;
  std::span<const int64_t> strides;  // in elements; empty = contiguous row-major
  std::shared_ptr<void> keep_alive;  // held while the method uses the memory in place

  int64_t int_value = 0;
  double double_value = 0;
  bool bool_value = false;
  std::string_view string_value;

  static InputArg tensor(const void* data, DType dtype, std::span<const int64_t> sizes,
                         std::span<const int64_t> strides = {},
                         std::shared_ptr<void> keep_alive = nullptr) {
    InputArg a;
    a.kind = ValueKind::Tensor;
    a.data = data;
    a.dtype = dtype;
    a.sizes = sizes;
    a.strides = strides;
    a.keep_alive = std::move(keep_alive);
    return a;
  }
  /// A tensor in device memory on GPU `device_index`.
  static InputArg cuda_tensor(const void* data, int device_index, DType dtype,
                              std::span<const int64_t> sizes, std::span<const int64_t> strides = {},
                              std::shared_ptr<void> keep_alive = nullptr) {
    InputArg a = tensor(data, dtype, sizes, strides, std::move(keep_alive));
    a.device = Device::CUDA;
    a.device_index = device_index;
    return a;
  }
  /// This device tensor is ready once the work queued so far on
  /// `producer_stream` (of its GPU) is done.
  InputArg& ready_after(uintptr_t producer_stream) {
    after_stream = true;
    stream = producer_stream;
    return *this;
  }
  static InputArg from_int(int64_t v) {
    InputArg a;
    a.kind = ValueKind::Int;
    a.int_value = v;
    return a;
  }
  static InputArg from_double(double v) {
    InputArg a;
    a.kind = ValueKind::Double;
    a.double_value = v;
    return a;
  }
  static InputArg from_bool(bool v) {
    InputArg a;
    a.kind = ValueKind::Bool;
    a.bool_value = v;
    return a;
  }
  static InputArg none() { return InputArg(); }
};

}  // namespace pterun
