#include "python/src/convert.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <bit>
#include <optional>
#include <utility>

#include "pterun/backend/device.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/error.h"
#include "pterun/core/tensor.h"
#include "pterun/core/text.h"
#include "python/src/convert_util.h"
#include "python/src/numpy_api.h"
#include "python/src/tensor.h"
#include "python/src/torch_tensor.h"

namespace nb = nanobind;

namespace pterun::python {
namespace {

using convert_detail::convert_dlpack;
using convert_detail::hold_object;
using convert_detail::kDLPackLegacyStream;
using convert_detail::message_of;
using convert_detail::place_on;
using convert_detail::raise;

std::optional<DType> integer_dtype(bool is_signed, Py_ssize_t itemsize) {
  switch (itemsize) {
    case 1: return is_signed ? DType::Int8 : DType::UInt8;
    case 2: return is_signed ? DType::Int16 : DType::UInt16;
    case 4: return is_signed ? DType::Int32 : DType::UInt32;
    case 8: return is_signed ? DType::Int64 : DType::UInt64;
  }
  return std::nullopt;
}

// Maps a struct-module format (one item, optional native byte-order prefix)
// to a dtype, by kind and item size (docs/python-api.md, B2: 'l' is int64 on Linux).
std::optional<DType> format_dtype(const char* fmt, Py_ssize_t itemsize) {
  const char* f = fmt ? fmt : "B";
  if (*f == '@' || *f == '=' || *f == '<') ++f;
  if (f[0] == 'Z' && f[1] != '\0' && f[2] == '\0') {
    if (f[1] == 'f') return DType::Complex64;
    if (f[1] == 'd') return DType::Complex128;
    return std::nullopt;
  }
  if (f[0] == '\0' || f[1] != '\0') return std::nullopt;
  switch (f[0]) {
    case '?': return DType::Bool;
    case 'e': return DType::Float16;
    case 'f': return DType::Float32;
    case 'd': return DType::Float64;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q': return integer_dtype(true, itemsize);
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q': return integer_dtype(false, itemsize);
  }
  return std::nullopt;
}

// Why format_dtype() refused `fmt`.
std::string format_error(const char* fmt) {
  if (fmt && (fmt[0] == '>' || fmt[0] == '!'))
    return "big-endian data is not supported; convert it to native byte order first";
  return "buffer format '" + std::string(fmt ? fmt : "") + "' is not supported";
}

// A plain torch tensor read without its __dlpack__ (torch_tensor.h); its
// writes are queued on torch's current stream, after which the method
// reads it (B19).
void convert_torch(const TorchTensorView& t, bool kept, InputBatch& batch) {
  InputArg& arg = batch.add(
      InputArg::tensor(t.data, t.dtype, t.sizes, t.strides, hold_object(t.owner, kept, batch)));
  if (t.cuda_index >= 0) {
    place_on(arg, t.cuda_index);
    arg.ready_after(t.stream);
  }
}

bool is_numpy_scalar(nb::handle obj, const char* kind) {
  nb::handle type = obj.type();
  if (!PyObject_HasAttrString(type.ptr(), "__module__")) return false;
  nb::object module = type.attr("__module__");
  if (!nb::isinstance<nb::str>(module) || nb::cast<std::string>(module) != "numpy") return false;
  nb::object np_kind = nb::getattr(obj, "dtype", nb::none());
  if (np_kind.is_none()) return false;
  std::string k = nb::cast<std::string>(np_kind.attr("kind"));
  return k.find_first_of(kind) != std::string::npos && nb::cast<int>(obj.attr("ndim")) == 0;
}

void convert_number(nb::handle obj, ValueKind declared, const InputSource& source,
                    InputBatch& batch) {
  PyObject* o = obj.ptr();
  auto is_bool = [&] { return PyBool_Check(o) || is_numpy_scalar(obj, "b"); };
  auto is_int = [&] { return (PyLong_Check(o) && !PyBool_Check(o)) || is_numpy_scalar(obj, "iu"); };
  auto is_float = [&] { return PyFloat_Check(o) || is_numpy_scalar(obj, "f"); };
  auto type_error = [&](const char* expected) {
    raise(PyExc_TypeError, source,
          std::string("expected ") + expected + ", got " +
              nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  };
  switch (declared) {
    case ValueKind::Int:
      if (!is_int()) type_error("an int");
      {
        int overflow = 0;
        nb::object as_int = nb::steal(PyNumber_Index(o));
        if (!as_int.is_valid()) throw nb::python_error();
        long long v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
        if (overflow) raise(PyExc_OverflowError, source, "int does not fit in 64 bits");
        batch.add(InputArg::from_int(v));
      }
      return;
    case ValueKind::Double:
      if (!is_float() && !is_int()) type_error("a float");
      {
        double v = PyFloat_AsDouble(o);
        if (PyErr_Occurred()) {
          nb::python_error err;
          raise(PyExc_OverflowError, source, message_of(err));
        }
        batch.add(InputArg::from_double(v));
      }
      return;
    case ValueKind::Bool:
      if (!is_bool()) type_error("a bool");
      batch.add(InputArg::from_bool(PyObject_IsTrue(o) == 1));
      return;
    default: type_error("a tensor");
  }
}

bool is_ml_dtypes_bfloat16(nb::handle obj) {
  nb::handle type = obj.type();
  if (!PyObject_HasAttrString(type.ptr(), "__module__")) return false;
  nb::object module = type.attr("__module__");
  if (!nb::isinstance<nb::str>(module) || nb::cast<std::string>(module) != "numpy") return false;
  nb::object dtype = nb::getattr(obj, "dtype", nb::none());
  if (dtype.is_none()) return false;
  nb::object name = nb::getattr(dtype, "name", nb::none());
  return nb::isinstance<nb::str>(name) && nb::cast<std::string>(name) == "bfloat16";
}

// Appends a host tensor described the way the buffer protocol and NumPy do
// (sizes; strides in bytes, null for C-contiguous), with element strides.
void add_strided(InputBatch& batch, const InputSource& source, const void* data, DType dtype,
                 int ndim, const Py_ssize_t* sizes, const Py_ssize_t* byte_strides,
                 Py_ssize_t itemsize, std::shared_ptr<void> held) {
  const size_t rank = static_cast<size_t>(ndim);
  std::span<int64_t> shape = batch.numbers(2 * rank);
  if (static_cast<size_t>(itemsize) != element_size(dtype)) {
    raise(PyExc_TypeError, source,
          "item size " + std::to_string(itemsize) + " does not match its format (" +
              std::string(dtype_name(dtype)) + ")");
  }
  // Every dtype pterun reads has a power-of-two item size: shifts, not
  // divisions, on the per-call path.
  const int shift = std::countr_zero(static_cast<uint64_t>(itemsize));
  for (size_t d = 0; d < rank; ++d) {
    shape[d] = sizes[d];
    const Py_ssize_t s = byte_strides ? byte_strides[d] : 0;
    if ((s & (itemsize - 1)) != 0) {
      raise(PyExc_ValueError, source, "strides that are not a multiple of the item size");
    }
    shape[rank + d] = s >> shift;
  }
  // No strides: C-contiguous (an empty span).
  std::span<const int64_t> strides = byte_strides ? shape.subspan(rank, rank) : shape.subspan(0, 0);
  batch.add(InputArg::tensor(data, dtype, shape.first(rank), strides, std::move(held)));
}

// A buffer-protocol object (B2a). The Py_buffer lives in the batch, or in
// a HeldBuffer the method keeps when it may use the memory in place.
void convert_buffer(nb::handle obj, const InputSource& source, bool kept, InputBatch& batch) {
  std::shared_ptr<HeldBuffer> held;
  Py_buffer* view = nullptr;
  if (kept) {
    held = std::make_shared<HeldBuffer>();
    view = &held->view;
  } else {
    view = &batch.buffer();
  }
  if (PyObject_GetBuffer(obj.ptr(), view, PyBUF_RECORDS_RO) != 0) {
    nb::python_error err;  // takes the pending exception
    // NumPy arrays of ml_dtypes' bfloat16 have neither a buffer format nor a
    // DLPack export: read their bits as uint16 and keep the dtype. Checked
    // only here, off the hot path (it runs NumPy's Python code).
    if (is_ml_dtypes_bfloat16(obj)) {
      nb::object bits = obj.attr("view")(nb::module_::import_("numpy").attr("uint16"));
      convert_buffer(bits, source, kept, batch);
      batch.back().dtype = DType::BFloat16;
      return;
    }
    if (PyObject_HasAttrString(obj.ptr(), "__dlpack__")) {
      // e.g. a bfloat16 JAX array: its buffer has no format.
      return convert_dlpack(obj, source, batch);
    }
    // Keep the exporter's exception type (B6).
    nb::object type = nb::borrow(err.type());
    std::string msg = message_of(err);
    raise(type.ptr(), source, std::string("cannot read the buffer: ") + msg);
  }
  DType dtype;
  if (std::optional<DType> d = format_dtype(view->format, view->itemsize)) {
    dtype = *d;
  } else {
    raise(PyExc_TypeError, source, format_error(view->format));
  }
  add_strided(batch, source, view->buf, dtype, view->ndim, view->shape, view->strides,
              view->itemsize, std::move(held));
}

// A NumPy array read through NumPy's C API: held by reference, as its
// memory cannot go while the array lives.
void convert_numpy(nb::handle obj, const NumpyArrayView& a, const InputSource& source, bool kept,
                   InputBatch& batch) {
  add_strided(batch, source, a.data, a.dtype, a.ndim, a.sizes, a.byte_strides, a.itemsize,
              hold_object(obj, kept, batch));
}

void convert_tensor(nb::handle obj, const InputSource& source, bool kept, InputBatch& batch) {
  if (PyTensor* tensor = as_tensor(obj)) {
    PyTensor& pt = *tensor;
    const int index = cuda_index(pt.t);
    // Our own results are complete when a call returns (B19): no wait,
    // unless another library got the memory and may still write it.
    if (index >= 0 && pt.exported) batch.wait_devices.push_back(index);
    InputArg& a =
        batch.add(InputArg::tensor(pt.t.data, pt.t.dtype, pt.t.sizes, pt.t.strides, pt.t.storage));
    place_on(a, index);
    return;
  }
  NumpyArrayView array;
  if (read_numpy_array(obj.ptr(), array)) return convert_numpy(obj, array, source, kept, batch);
  if (PyObject_CheckBuffer(obj.ptr())) return convert_buffer(obj, source, kept, batch);
  TorchTensorView torch;
  if (read_torch_tensor(obj, batch, torch)) return convert_torch(torch, kept, batch);
  if (PyObject_HasAttrString(obj.ptr(), "__dlpack__")) return convert_dlpack(obj, source, batch);
  raise(PyExc_TypeError, source,
        "expected an array (buffer protocol, DLPack or pterun.Tensor), got " +
            nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
}

}  // namespace

std::string InputSource::prefix() const {
  if (!label.empty()) return std::string(label) + ": ";
  return "input " + std::to_string(index) + " of method '" + printable(method) + "': ";
}

void convert_input(nb::handle obj, ValueKind declared, const InputSource& source, bool kept,
                   InputBatch& batch) {
  if (declared == ValueKind::Tensor) return convert_tensor(obj, source, kept, batch);
  if (declared == ValueKind::None) {
    if (!obj.is_none()) raise(PyExc_TypeError, source, "expected None");
    batch.add(InputArg::none());
    return;
  }
  if (declared == ValueKind::String) {
    if (!nb::isinstance<nb::str>(obj)) raise(PyExc_TypeError, source, "expected a str");
    // The string lives in the Python object, which the caller holds.
    InputArg a;
    a.kind = ValueKind::String;
    Py_ssize_t len = 0;
    const char* s = PyUnicode_AsUTF8AndSize(obj.ptr(), &len);
    if (s == nullptr) throw nb::python_error();
    a.string_value = std::string_view(s, static_cast<size_t>(len));
    batch.add(std::move(a));
    return;
  }
  convert_number(obj, declared, source, batch);
}

int resolve_device(const std::string& device) {
  const DeviceSpec spec = pterun::parse_device(device);
  if (spec.type == Device::CPU) return -1;
  const int index = spec.index;
  const int count = backend::cuda_device_count();
  if (count == 0) {
    throw std::runtime_error("device '" + device +
                             "' is not available: " + backend::cuda_unavailable_reason());
  }
  if (index >= count) {
    throw std::runtime_error("device '" + device + "' does not exist (this machine has " +
                             std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
                             ")");
  }
  return index;
}

std::string device_string(int cuda_index) {
  return cuda_index < 0 ? std::string("cpu") : pterun::device_string({Device::CUDA, cuda_index});
}

void wait_for_producers(InputBatch& batch) {
  if (batch.wait_legacy_streams.empty() && batch.wait_devices.empty()) return;
  auto unique = [](std::vector<int>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  unique(batch.wait_legacy_streams);
  unique(batch.wait_devices);
  {
    nb::gil_scoped_release release;
    for (int d : batch.wait_devices) backend::synchronize_device(d);
    for (int d : batch.wait_legacy_streams) {
      // A whole-device wait covers that device's legacy stream too.
      if (!std::binary_search(batch.wait_devices.begin(), batch.wait_devices.end(), d)) {
        backend::synchronize_stream(d, kDLPackLegacyStream);
      }
    }
  }
  batch.wait_legacy_streams.clear();
  batch.wait_devices.clear();
}

void convert_inputs(nb::handle inputs, const Method& method, size_t max_count, InputBatch& batch) {
  PyObject* seq = inputs.ptr();
  if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
    throw nb::type_error(("method '" + printable(method.name()) +
                          "': inputs must be a list or tuple, got " +
                          nb::cast<std::string>(nb::str(inputs.type().attr("__name__"))))
                             .c_str());
  }
  const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(seq));
  if (n > max_count) {
    throw nb::value_error(("method '" + printable(method.name()) + "' takes " +
                           std::to_string(method.num_inputs()) + " inputs, got " +
                           std::to_string(n))
                              .c_str());
  }
  batch.reserve(n);
  const MethodMeta& meta = method.meta();
  for (size_t i = 0; i < n; ++i) {
    // Python code run by a conversion (__index__, __dlpack__) may change a
    // list: check its length and hold the item.
    if (static_cast<size_t>(PySequence_Fast_GET_SIZE(seq)) != n) {
      throw nb::value_error(
          ("method '" + printable(method.name()) + "': the inputs list changed while it was read")
              .c_str());
    }
    nb::object item = nb::borrow(PySequence_Fast_GET_ITEM(seq, static_cast<Py_ssize_t>(i)));
    convert_input(item, meta.input_tag(i), InputSource{method.name(), i, {}},
                  method.input_may_alias(i), batch);
  }
  wait_for_producers(batch);
}

nb::object to_python(OutputValue&& value) {
  return std::visit(
      [](auto&& v) -> nb::object {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return nb::none();
        else if constexpr (std::is_same_v<V, TensorResult>)
          return wrap_tensor(std::move(v));
        else if constexpr (std::is_same_v<V, int64_t>)
          return nb::int_(v);
        else if constexpr (std::is_same_v<V, double>)
          return nb::float_(v);
        else if constexpr (std::is_same_v<V, bool>)
          return nb::bool_(v);
        else
          return nb::str(v.c_str(), v.size());
      },
      std::move(value));
}

nb::list to_python(std::vector<OutputValue>&& values) {
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(values.size())));
  if (!out.is_valid()) throw nb::python_error();
  for (size_t i = 0; i < values.size(); ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i),
                    to_python(std::move(values[i])).release().ptr());
  }
  return out;
}

}  // namespace pterun::python
