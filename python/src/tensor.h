#pragma once

#include <nanobind/nanobind.h>

#include "pterun/executor/runner.h"

namespace pterun::python {

/// The Python-visible tensor (pterun.Tensor): a result of a call, or a
/// copy made by Tensor.from_host / to_host. Its memory is on the host or on
/// one GPU (`t.device`).
struct PyTensor {
  TensorResult t;
  /// Set once GPU memory of this tensor was handed to another library
  /// through __dlpack__: that library may write it on streams pterun does
  /// not know, so readers wait for the whole device first (docs/python-api.md, B19, B20).
  bool exported = false;
};

/// The pterun.Tensor `obj` is (a subclass included), or nullptr.
PyTensor* as_tensor(nanobind::handle obj);

/// A new pterun.Tensor object holding `t`.
nanobind::object wrap_tensor(TensorResult&& t);

/// The GPU index of a tensor's memory, or -1 for host memory.
int cuda_index(const TensorResult& t);

/// Binds pterun.Tensor (B20).
void init_tensor(nanobind::module_& m);

}  // namespace pterun::python
