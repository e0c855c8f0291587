#pragma once

// NumPy's C API, for the two conversions on every call's path: reading a
// NumPy array input without the buffer protocol (which rebuilds a format
// string per call) and making the array of Tensor.numpy() without going
// through numpy.asarray. Loaded on first use: pterun imports without NumPy.

#include <nanobind/nanobind.h>

#include <cstdint>

#include "pterun/core/dtype.h"
#include "pterun/executor/runner.h"

namespace pterun::python {

/// A NumPy array's memory as NumPy describes it (valid while the array
/// lives). Sizes and strides are NumPy's own (strides in bytes).
struct NumpyArrayView {
  const void* data = nullptr;
  DType dtype = DType::Float32;
  int ndim = 0;
  const Py_ssize_t* sizes = nullptr;
  const Py_ssize_t* byte_strides = nullptr;
  Py_ssize_t itemsize = 0;
};

/// Reads `obj` when it is a NumPy ndarray (or subclass) in native byte
/// order with a dtype pterun has; false otherwise (the caller then takes the
/// general buffer-protocol path, which also explains refusals).
bool read_numpy_array(PyObject* obj, NumpyArrayView& out);

/// A NumPy array viewing `t`'s host memory (writeable, like the memory it
/// views), with `base` as its owner (a new reference is taken). BFloat16
/// comes back as uint16 bits. nullptr with a Python error set on failure
/// (NumPy missing, a dtype NumPy lacks).
PyObject* make_numpy_array(const TensorResult& t, PyObject* base);

}  // namespace pterun::python
