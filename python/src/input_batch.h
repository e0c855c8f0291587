#pragma once

#include <nanobind/nanobind.h>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>
#include <vector>

#include "pterun/executor/input.h"

namespace pterun::python {

/// Storage for one call's converted inputs: the InputArgs, the sizes and
/// strides their spans point to, and the Python buffers and objects they
/// read, released when the batch is destroyed (with the GIL held). A call
/// with a few inputs allocates nothing: it all fits in the batch's inline
/// bytes.
class InputBatch {
 public:
  InputBatch() = default;
  ~InputBatch();
  InputBatch(const InputBatch&) = delete;
  InputBatch& operator=(const InputBatch&) = delete;

  /// The converted inputs, in order.
  std::span<const InputArg> args() const { return {args_, count_}; }
  /// Room for `n` inputs (more still fit, moved once).
  void reserve(size_t n);
  InputArg& add(InputArg&& a);
  InputArg& back() { return args_[count_ - 1]; }
  /// `n` numbers (sizes, strides) that live as long as the batch.
  std::span<int64_t> numbers(size_t n);
  /// An empty Py_buffer at a stable address, released (when filled) with
  /// the batch.
  Py_buffer& buffer();
  /// Keeps `obj` alive as long as the batch.
  void hold(nanobind::handle obj);

  // The host waits before a run (docs/python-api.md, B19), done once by wait_for_producers().
  // GPUs whose legacy default stream DLPack producers of pinned or managed
  // host memory ordered their pending writes before (we pass stream=1), and
  // GPUs holding pterun results that were handed to another library through
  // __dlpack__ (it may write them on any stream: the whole device is waited
  // for). Device memory from DLPack producers and torch is not waited for
  // here: the method orders its reads after the producer's stream on the
  // GPU (InputArg::ready_after).
  std::vector<int> wait_legacy_streams;
  std::vector<int> wait_devices;

 private:
  // A Python buffer or object released with the batch.
  struct Held {
    Held* next = nullptr;
    Py_buffer view{};
    PyObject* object = nullptr;
  };
  void* allocate(size_t bytes, size_t align);
  Held& add_held();

  InputArg* args_ = nullptr;
  size_t count_ = 0;
  size_t capacity_ = 0;
  Held* held_ = nullptr;
  size_t used_ = 0;  // bytes of inline_ handed out
  alignas(std::max_align_t) std::byte inline_[2048];
  std::pmr::monotonic_buffer_resource overflow_;  // beyond inline_
};

}  // namespace pterun::python
