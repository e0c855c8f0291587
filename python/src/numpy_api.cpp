#include "python/src/numpy_api.h"

// The one file that includes NumPy's headers: the API table is loaded here
// (PyArray_ImportNumPyAPI) and used nowhere else.
#define PY_ARRAY_UNIQUE_SYMBOL pterun_numpy_api
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cstring>
#include <string>

namespace pterun::python {
namespace {

// True once NumPy's API table is loaded; tries (and clears the error) while
// it is not. Only called with the GIL held, when NumPy is in use.
bool numpy_loaded() {
  if (PyArray_API != nullptr) return true;
  if (PyArray_ImportNumPyAPI() == 0) return true;
  PyErr_Clear();
  return false;
}

bool integer_dtype(char kind, Py_ssize_t size, DType& out) {
  const bool is_signed = kind == 'i';
  switch (size) {
    case 1: out = is_signed ? DType::Int8 : DType::UInt8; return true;
    case 2: out = is_signed ? DType::Int16 : DType::UInt16; return true;
    case 4: out = is_signed ? DType::Int32 : DType::UInt32; return true;
    case 8: out = is_signed ? DType::Int64 : DType::UInt64; return true;
  }
  return false;
}

// By kind and item size, as the buffer path maps formats (docs/python-api.md, B2).
bool descr_dtype(PyArray_Descr* descr, DType& out) {
  const Py_ssize_t size = PyDataType_ELSIZE(descr);
  switch (descr->kind) {
    case 'b': out = DType::Bool; return size == 1;
    case 'i':
    case 'u': return integer_dtype(descr->kind, size, out);
    case 'f':
      if (size == 2) out = DType::Float16;
      if (size == 4) out = DType::Float32;
      if (size == 8) out = DType::Float64;
      return size == 2 || size == 4 || size == 8;
    case 'c':
      if (size == 8) out = DType::Complex64;
      if (size == 16) out = DType::Complex128;
      return size == 8 || size == 16;
  }
  return false;
}

int numpy_type(DType d) {
  switch (d) {
    case DType::Bool: return NPY_BOOL;
    case DType::UInt8: return NPY_UINT8;
    case DType::UInt16:
    case DType::BFloat16: return NPY_UINT16;
    case DType::UInt32: return NPY_UINT32;
    case DType::UInt64: return NPY_UINT64;
    case DType::Int8: return NPY_INT8;
    case DType::Int16: return NPY_INT16;
    case DType::Int32: return NPY_INT32;
    case DType::Int64: return NPY_INT64;
    case DType::Float16: return NPY_HALF;
    case DType::Float32: return NPY_FLOAT32;
    case DType::Float64: return NPY_FLOAT64;
    case DType::Complex64: return NPY_COMPLEX64;
    case DType::Complex128: return NPY_COMPLEX128;
    default: return -1;
  }
}

}  // namespace

bool read_numpy_array(PyObject* obj, NumpyArrayView& out) {
  // Before NumPy's API is loaded, recognise its arrays by type name (an
  // ndarray in hand means NumPy is imported, so loading is cheap).
  if (PyArray_API == nullptr &&
      (std::strcmp(Py_TYPE(obj)->tp_name, "numpy.ndarray") != 0 || !numpy_loaded())) {
    return false;
  }
  if (!PyArray_Check(obj)) return false;
  auto* array = reinterpret_cast<PyArrayObject*>(obj);
  PyArray_Descr* descr = PyArray_DESCR(array);
  if (!PyArray_ISNBO(descr->byteorder) || !descr_dtype(descr, out.dtype)) return false;
  out.data = PyArray_DATA(array);
  out.ndim = PyArray_NDIM(array);
  out.sizes = PyArray_DIMS(array);
  out.byte_strides = PyArray_STRIDES(array);
  out.itemsize = PyDataType_ELSIZE(descr);
  return true;
}

PyObject* make_numpy_array(const TensorResult& t, PyObject* base) {
  if (PyArray_API == nullptr && PyArray_ImportNumPyAPI() != 0) return nullptr;  // ImportError
  const int type = numpy_type(t.dtype);
  if (type < 0) {
    PyErr_Format(PyExc_TypeError, "Tensor: dtype %s has no NumPy equivalent",
                 std::string(dtype_name(t.dtype)).c_str());
    return nullptr;
  }
  const int ndim = static_cast<int>(t.sizes.size());
  if (ndim > NPY_MAXDIMS) {
    PyErr_SetString(PyExc_ValueError, "Tensor: too many dimensions for NumPy");
    return nullptr;
  }
  npy_intp sizes[NPY_MAXDIMS];
  npy_intp strides[NPY_MAXDIMS];
  const auto item = static_cast<npy_intp>(element_size(t.dtype));
  // Row-major strides are left to NumPy, which then derives the flags
  // without a pass over the strides (it counts a size 0 as 1, as we do).
  bool row_major = true;
  npy_intp expected = 1;
  for (int d = ndim; d-- > 0;) {
    sizes[d] = static_cast<npy_intp>(t.sizes[d]);
    if (t.strides.empty()) continue;
    strides[d] = static_cast<npy_intp>(t.strides[d]) * item;
    row_major = row_major && t.strides[d] == expected;
    expected *= sizes[d] == 0 ? 1 : sizes[d];
  }
  PyObject* array =
      PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(type), ndim, sizes,
                           row_major ? nullptr : strides, t.data, NPY_ARRAY_WRITEABLE, nullptr);
  if (array == nullptr) return nullptr;
  Py_INCREF(base);
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), base) != 0) {
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

}  // namespace pterun::python
