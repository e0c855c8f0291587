#include "python/src/convert.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "pterun/backend/device.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/error.h"
#include "python/src/tensor.h"

namespace nb = nanobind;

namespace pterun::python {
namespace {

[[noreturn]] void raise(PyObject* type, const std::string& prefix, const std::string& msg) {
  std::string text = prefix + msg;
  PyErr_SetString(type, text.c_str());
  throw nb::python_error();
}

// Maps a struct-module format (one item, optional byte-order prefix) to a
// dtype, by kind and item size (B2: 'l' is int64 on Linux).
bool format_dtype(const char* fmt, Py_ssize_t itemsize, DType& out, std::string& why) {
  std::string f = fmt ? fmt : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<'))
    f = f.substr(1);
  else if (!f.empty() && (f[0] == '>' || f[0] == '!')) {
    why = "big-endian data is not supported; convert it to native byte order first";
    return false;
  }
  if (f == "?") {
    out = DType::Bool;
    return true;
  }
  if (f == "e") {
    out = DType::Float16;
    return true;
  }
  if (f == "f") {
    out = DType::Float32;
    return true;
  }
  if (f == "d") {
    out = DType::Float64;
    return true;
  }
  if (f == "Zf") {
    out = DType::Complex64;
    return true;
  }
  if (f == "Zd") {
    out = DType::Complex128;
    return true;
  }
  static const std::string signed_codes = "bhilq", unsigned_codes = "BHILQ";
  if (f.size() == 1 && signed_codes.find(f[0]) != std::string::npos) {
    switch (itemsize) {
      case 1: out = DType::Int8; return true;
      case 2: out = DType::Int16; return true;
      case 4: out = DType::Int32; return true;
      case 8: out = DType::Int64; return true;
    }
  }
  if (f.size() == 1 && unsigned_codes.find(f[0]) != std::string::npos) {
    switch (itemsize) {
      case 1: out = DType::UInt8; return true;
      case 2: out = DType::UInt16; return true;
      case 4: out = DType::UInt32; return true;
      case 8: out = DType::UInt64; return true;
    }
  }
  why = "buffer format '" + std::string(fmt ? fmt : "") + "' is not supported";
  return false;
}

bool dlpack_dtype(nb::dlpack::dtype t, DType& out) {
  using nb::dlpack::dtype_code;
  if (t.lanes != 1) return false;
  auto code = static_cast<dtype_code>(t.code);
  struct Entry {
    dtype_code code;
    int bits;
    DType dtype;
  };
  static constexpr Entry kEntries[] = {
      {dtype_code::Bool, 8, DType::Bool},
      {dtype_code::Int, 8, DType::Int8},
      {dtype_code::Int, 16, DType::Int16},
      {dtype_code::Int, 32, DType::Int32},
      {dtype_code::Int, 64, DType::Int64},
      {dtype_code::UInt, 8, DType::UInt8},
      {dtype_code::UInt, 16, DType::UInt16},
      {dtype_code::UInt, 32, DType::UInt32},
      {dtype_code::UInt, 64, DType::UInt64},
      {dtype_code::Float, 16, DType::Float16},
      {dtype_code::Float, 32, DType::Float32},
      {dtype_code::Float, 64, DType::Float64},
      {dtype_code::Bfloat, 16, DType::BFloat16},
      {dtype_code::Complex, 64, DType::Complex64},
      {dtype_code::Complex, 128, DType::Complex128},
  };
  for (const auto& e : kEntries) {
    if (e.code == code && e.bits == t.bits) {
      out = e.dtype;
      return true;
    }
  }
  return false;
}

/// An imported DLPack tensor, released under the GIL.
struct HeldArray {
  nb::ndarray<nb::ro> array;
  ~HeldArray() {
    nb::gil_scoped_acquire gil;
    array = nb::ndarray<nb::ro>();
  }
};

// DLPack device types (dlpack.h's DLDeviceType).
constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

// Marks `a` as memory of GPU `index` (host memory when index < 0).
void place_on(InputArg& a, int index) {
  if (index < 0) return;
  a.device = kernels::Device::CUDA;
  a.device_index = index;
}

[[noreturn]] void reraise(nb::python_error& e, const std::string& prefix) {
  nb::object type = nb::borrow(e.type());
  std::string msg = e.what();
  raise(type.ptr(), prefix, msg);
}

// The producer's (device type, device id), from __dlpack_device__; a CPU
// array when it has none.
std::pair<int, int> dlpack_device(nb::handle obj, const std::string& prefix) {
  if (!PyObject_HasAttrString(obj.ptr(), "__dlpack_device__")) return {kDLCPU, 0};
  try {
    nb::object d = obj.attr("__dlpack_device__")();
    return {nb::cast<int>(d[0]), nb::cast<int>(d[1])};
  } catch (nb::python_error& e) {
    reraise(e, prefix);
  } catch (const std::exception&) {
    PyErr_Clear();
    raise(PyExc_TypeError, prefix, "__dlpack_device__() did not return (device_type, device_id)");
  }
}

void convert_dlpack(nb::handle obj, const std::string& prefix, InputBatch& batch) {
  auto [device_type, device_id] = dlpack_device(obj, prefix);
  const bool cuda_memory =
      device_type == kDLCUDA || device_type == kDLCUDAHost || device_type == kDLCUDAManaged;
  if (!cuda_memory && device_type != kDLCPU) {
    raise(PyExc_TypeError, prefix,
          "the array lives on DLPack device type " + std::to_string(device_type) +
              ", which pterun cannot read (it reads the CPU and CUDA GPUs)");
  }
  if (cuda_memory && !backend::built_with_cuda()) {
    raise(PyExc_TypeError, prefix,
          "the array lives on a GPU and this build of pterun has no CUDA support: copy it to "
          "the host first");
  }
  auto held = std::make_shared<HeldArray>();
  // Ask the producer for a capsule ourselves, so that its errors keep their
  // Python type and message (B6); prefer a versioned capsule (producers
  // predating max_version raise TypeError: ask again without). For GPU
  // memory pass stream=1, the legacy default stream (the array API forbids
  // 0, torch refuses 2): the producer orders its pending writes before that
  // stream, and wait_for_producers() waits for it once before the run
  // (B19).
  std::vector<nb::dict> requests;  // most capable first
  for (bool versioned : {true, false}) {
    nb::dict kwargs;
    if (versioned) kwargs["max_version"] = nb::make_tuple(1, 0);
    if (cuda_memory) kwargs["stream"] = 1;
    requests.push_back(kwargs);
  }
  if (cuda_memory) requests.emplace_back();  // no stream: the legacy stream too
  nb::object capsule;
  for (size_t r = 0; r < requests.size(); ++r) {
    try {
      capsule = obj.attr("__dlpack__")(**requests[r]);
      break;
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_TypeError) || r + 1 == requests.size()) reraise(e, prefix);
    }
  }
  try {
    held->array = nb::cast<nb::ndarray<nb::ro>>(capsule);
  } catch (const std::exception& e) {
    PyErr_Clear();
    raise(PyExc_TypeError, prefix, std::string("cannot import its DLPack capsule: ") + e.what());
  }
  const auto& a = held->array;
  const int type = a.device_type();
  if (type != kDLCPU && type != kDLCUDA && type != kDLCUDAHost && type != kDLCUDAManaged) {
    raise(PyExc_TypeError, prefix,
          "the array's DLPack capsule is on device type " + std::to_string(type) +
              ", which pterun cannot read");
  }
  if (type != kDLCPU) {
    // Managed and pinned host memory are read as host memory, once the
    // producer's writes are done.
    batch.wait_legacy_streams.push_back(type == kDLCUDA ? a.device_id() : device_id);
  }
  DType dtype;
  if (!dlpack_dtype(a.dtype(), dtype)) {
    raise(PyExc_TypeError, prefix, "the array's DLPack dtype is not supported");
  }
  std::vector<int64_t> sizes(a.ndim()), strides(a.ndim());
  for (size_t d = 0; d < a.ndim(); ++d) {
    sizes[d] = static_cast<int64_t>(a.shape(d));
    strides[d] = a.stride(d);
  }
  batch.shapes.push_back(std::move(sizes));
  auto& sz = batch.shapes.back();
  batch.shapes.push_back(std::move(strides));
  auto& st = batch.shapes.back();
  batch.args.push_back(InputArg::tensor(a.data(), dtype, sz, st, held));
  if (type == kDLCUDA) place_on(batch.args.back(), a.device_id());
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

void convert_number(nb::handle obj, ValueKind declared, const std::string& prefix,
                    InputBatch& batch) {
  const bool is_bool = PyBool_Check(obj.ptr()) || is_numpy_scalar(obj, "b");
  const bool is_int =
      (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) || is_numpy_scalar(obj, "iu");
  const bool is_float = PyFloat_Check(obj.ptr()) || is_numpy_scalar(obj, "f");
  auto type_error = [&](const char* expected) {
    raise(PyExc_TypeError, prefix,
          std::string("expected ") + expected + ", got " +
              nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  };
  switch (declared) {
    case ValueKind::Int:
      if (!is_int) type_error("an int");
      {
        int overflow = 0;
        nb::object as_int = nb::steal(PyNumber_Index(obj.ptr()));
        if (!as_int.is_valid()) throw nb::python_error();
        long long v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
        if (overflow) raise(PyExc_OverflowError, prefix, "int does not fit in 64 bits");
        batch.args.push_back(InputArg::from_int(v));
      }
      return;
    case ValueKind::Double:
      if (!is_float && !is_int) type_error("a float");
      {
        double v = PyFloat_AsDouble(obj.ptr());
        if (PyErr_Occurred()) {
          nb::python_error err;
          raise(PyExc_OverflowError, prefix, err.what());
        }
        batch.args.push_back(InputArg::from_double(v));
      }
      return;
    case ValueKind::Bool:
      if (!is_bool) type_error("a bool");
      batch.args.push_back(InputArg::from_bool(PyObject_IsTrue(obj.ptr()) == 1));
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

void convert_tensor(nb::handle obj, const std::string& prefix, InputBatch& batch) {
  if (nb::isinstance<PyTensor>(obj)) {
    PyTensor& pt = nb::cast<PyTensor&>(obj);
    const int index = cuda_index(pt.t);
    // Our own results are complete when a call returns (B19): no wait,
    // unless another library got the memory and may still write it.
    if (index >= 0 && pt.exported) batch.wait_devices.push_back(index);
    batch.shapes.emplace_back(pt.t.sizes);
    auto& sizes = batch.shapes.back();
    batch.shapes.emplace_back(pt.t.strides);
    auto& strides = batch.shapes.back();
    batch.args.push_back(InputArg::tensor(pt.t.data, pt.t.dtype, sizes, strides, pt.t.storage));
    place_on(batch.args.back(), index);
    return;
  }
  if (!PyObject_CheckBuffer(obj.ptr())) {
    if (PyObject_HasAttrString(obj.ptr(), "__dlpack__")) return convert_dlpack(obj, prefix, batch);
    raise(PyExc_TypeError, prefix,
          "expected an array (buffer protocol, DLPack or pterun.Tensor), got " +
              nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  }
  auto held = std::make_shared<HeldBuffer>();
  if (PyObject_GetBuffer(obj.ptr(), &held->view, PyBUF_RECORDS_RO) != 0) {
    nb::python_error err;  // takes the pending exception
    // NumPy arrays of ml_dtypes' bfloat16 have neither a buffer format nor a
    // DLPack export: read their bits as uint16 and keep the dtype. Checked
    // only here, off the hot path (it runs NumPy's Python code).
    if (is_ml_dtypes_bfloat16(obj)) {
      nb::object bits = obj.attr("view")(nb::module_::import_("numpy").attr("uint16"));
      convert_tensor(bits, prefix, batch);
      batch.args.back().dtype = DType::BFloat16;
      return;
    }
    if (PyObject_HasAttrString(obj.ptr(), "__dlpack__")) {
      // e.g. a bfloat16 JAX array: its buffer has no format.
      return convert_dlpack(obj, prefix, batch);
    }
    // Keep the exporter's exception type (B6).
    nb::object type = nb::borrow(err.type());
    std::string msg = err.what();
    raise(type.ptr(), prefix, std::string("cannot read the buffer: ") + msg);
  }
  const Py_buffer& v = held->view;
  DType dtype;
  std::string why;
  if (!format_dtype(v.format, v.itemsize, dtype, why)) raise(PyExc_TypeError, prefix, why);
  std::vector<int64_t> sizes(v.ndim), strides(v.ndim);
  for (int d = 0; d < v.ndim; ++d) {
    sizes[d] = v.shape[d];
    Py_ssize_t s = v.strides ? v.strides[d] : 0;
    if (s % v.itemsize != 0) {
      raise(PyExc_ValueError, prefix, "strides that are not a multiple of the item size");
    }
    strides[d] = s / v.itemsize;
  }
  if (v.strides == nullptr) strides.clear();
  batch.shapes.push_back(std::move(sizes));
  auto& sz = batch.shapes.back();
  batch.shapes.push_back(std::move(strides));
  auto& st = batch.shapes.back();
  batch.args.push_back(InputArg::tensor(v.buf, dtype, sz, st, held));
}

}  // namespace

void convert_input(nb::handle obj, ValueKind declared, const std::string& prefix,
                   InputBatch& batch) {
  if (declared == ValueKind::Tensor) return convert_tensor(obj, prefix, batch);
  if (declared == ValueKind::None) {
    if (!obj.is_none()) raise(PyExc_TypeError, prefix, "expected None");
    batch.args.push_back(InputArg::none());
    return;
  }
  if (declared == ValueKind::String) {
    if (!nb::isinstance<nb::str>(obj)) raise(PyExc_TypeError, prefix, "expected a str");
    batch.shapes.emplace_back();  // keeps indices stable; strings live in the Python object
    InputArg a;
    a.kind = ValueKind::String;
    Py_ssize_t len = 0;
    const char* s = PyUnicode_AsUTF8AndSize(obj.ptr(), &len);
    a.string_value = std::string_view(s, static_cast<size_t>(len));
    batch.args.push_back(a);
    return;
  }
  convert_number(obj, declared, prefix, batch);
}

int parse_device(const std::string& device) {
  if (device == "cpu") return -1;
  int index = 0;
  if (device == "cuda") {
    index = 0;
  } else if (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() < 9 &&
             device.find_first_not_of("0123456789", 5) == std::string::npos) {
    index = std::stoi(device.substr(5));
  } else {
    throw nb::value_error(
        ("device must be 'cpu', 'cuda' or 'cuda:N', got '" + device + "'").c_str());
  }
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
  return cuda_index < 0 ? std::string("cpu") : "cuda:" + std::to_string(cuda_index);
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
        backend::synchronize_legacy_stream(d);
      }
    }
  }
  batch.wait_legacy_streams.clear();
  batch.wait_devices.clear();
}

InputBatch convert_inputs(nb::handle inputs, const Method& method, size_t max_count) {
  if (!PyList_Check(inputs.ptr()) && !PyTuple_Check(inputs.ptr())) {
    throw nb::type_error(("method '" + method.name() + "': inputs must be a list or tuple, got " +
                          nb::cast<std::string>(nb::str(inputs.type().attr("__name__"))))
                             .c_str());
  }
  size_t n = static_cast<size_t>(PySequence_Size(inputs.ptr()));
  if (n > max_count) {
    throw nb::value_error(("method '" + method.name() + "' takes " +
                           std::to_string(method.num_inputs()) + " inputs, got " +
                           std::to_string(n))
                              .c_str());
  }
  InputBatch batch;
  batch.args.reserve(n);
  const MethodMeta& meta = method.meta();
  for (size_t i = 0; i < n; ++i) {
    nb::handle item = PySequence_Fast_GET_ITEM(inputs.ptr(), static_cast<Py_ssize_t>(i));
    convert_input(item, meta.input_tag(i),
                  "input " + std::to_string(i) + " of method '" + method.name() + "': ", batch);
  }
  wait_for_producers(batch);
  return batch;
}

nb::object to_python(OutputValue&& value) {
  return std::visit(
      [](auto&& v) -> nb::object {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return nb::none();
        else if constexpr (std::is_same_v<V, TensorResult>)
          return nb::cast(PyTensor{std::move(v)});
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
  nb::list out;
  for (auto& v : values) out.append(to_python(std::move(v)));
  return out;
}

}  // namespace pterun::python
