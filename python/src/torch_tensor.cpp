#include "python/src/torch_tensor.h"

#include <array>
#include <utility>

namespace nb = nanobind;

namespace pterun::python {
namespace {

/// What the fast path needs from torch, looked up once torch is imported.
/// The references are kept for the life of the process.
struct TorchApi {
  PyObject* tensor_type = nullptr;
  PyObject* strided = nullptr;
  PyObject* current_raw_stream = nullptr;  // torch._C._cuda_getCurrentRawStream, if present
  std::array<std::pair<PyObject*, DType>, 15> dtypes{};
  size_t dtype_count = 0;
};

// Interned attribute names.
struct Names {
  PyObject* requires_grad = PyUnicode_InternFromString("requires_grad");
  PyObject* is_conj = PyUnicode_InternFromString("is_conj");
  PyObject* is_neg = PyUnicode_InternFromString("is_neg");
  PyObject* resolve_conj = PyUnicode_InternFromString("resolve_conj");
  PyObject* resolve_neg = PyUnicode_InternFromString("resolve_neg");
  PyObject* is_nested = PyUnicode_InternFromString("is_nested");
  PyObject* layout = PyUnicode_InternFromString("layout");
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* is_cuda = PyUnicode_InternFromString("is_cuda");
  PyObject* is_cpu = PyUnicode_InternFromString("is_cpu");
  PyObject* get_device = PyUnicode_InternFromString("get_device");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* stride = PyUnicode_InternFromString("stride");
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
};

const Names& names() {
  static const Names n;
  return n;
}

// Fills `api` from the imported torch module; false (error cleared) when
// torch is not imported yet or lacks something.
bool load(TorchApi& api) {
  static PyObject* const torch_name = PyUnicode_InternFromString("torch");
  PyObject* torch = PyImport_GetModule(torch_name);
  if (torch == nullptr) {
    PyErr_Clear();
    return false;
  }
  nb::object module = nb::steal(torch);
  try {
    nb::object tensor = module.attr("Tensor");
    nb::object strided = module.attr("strided");
    static constexpr std::pair<const char*, DType> kDTypes[] = {
        {"float32", DType::Float32},
        {"float64", DType::Float64},
        {"float16", DType::Float16},
        {"bfloat16", DType::BFloat16},
        {"int8", DType::Int8},
        {"int16", DType::Int16},
        {"int32", DType::Int32},
        {"int64", DType::Int64},
        {"uint8", DType::UInt8},
        {"uint16", DType::UInt16},
        {"uint32", DType::UInt32},
        {"uint64", DType::UInt64},
        {"bool", DType::Bool},
        {"complex64", DType::Complex64},
        {"complex128", DType::Complex128},
    };
    TorchApi loaded;
    for (const auto& [name, dtype] : kDTypes) {
      nb::object d = nb::getattr(module, name, nb::none());
      if (!d.is_none()) loaded.dtypes[loaded.dtype_count++] = {d.release().ptr(), dtype};
    }
    nb::object c = module.attr("_C");
    nb::object stream_fn = nb::getattr(c, "_cuda_getCurrentRawStream", nb::none());
    loaded.tensor_type = tensor.release().ptr();
    loaded.strided = strided.release().ptr();
    loaded.current_raw_stream = stream_fn.is_none() ? nullptr : stream_fn.release().ptr();
    api = loaded;
    return true;
  } catch (const nb::python_error&) {
    return false;  // torch half imported, or a version without these names
  }
}

const TorchApi* torch_api() {
  static TorchApi api;
  static bool loaded = false;
  if (!loaded) loaded = load(api);
  return loaded ? &api : nullptr;
}

// `result` (a new reference; null after an error) is True; false, with
// the error cleared, on any failure.
bool is_true(PyObject* result) {
  nb::object v = nb::steal(result);
  if (!v.is_valid()) {
    PyErr_Clear();
    return false;
  }
  return v.ptr() == Py_True;
}

bool attr_true(PyObject* obj, PyObject* name) {
  return is_true(PyObject_GetAttr(obj, name));
}
bool call_true(PyObject* obj, PyObject* name) {
  return is_true(PyObject_CallMethodNoArgs(obj, name));
}

// Reads a tuple of ints into `out`; false on anything else.
bool read_ints(PyObject* tuple, std::span<int64_t> out) {
  if (tuple == nullptr || !PyTuple_Check(tuple) ||
      static_cast<size_t>(PyTuple_GET_SIZE(tuple)) != out.size()) {
    return false;
  }
  for (size_t d = 0; d < out.size(); ++d) {
    const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, static_cast<Py_ssize_t>(d)));
    if (v == -1 && PyErr_Occurred()) return false;
    out[d] = v;
  }
  return true;
}

bool read(nb::handle obj, const TorchApi& api, InputBatch& batch, TorchTensorView& out) {
  const Names& n = names();
  PyObject* o = obj.ptr();
  if (attr_true(o, n.requires_grad) || attr_true(o, n.is_nested)) return false;
  out.owner = nb::borrow(obj);
  for (PyObject* bit : {n.is_conj, n.is_neg}) {
    if (!call_true(o, bit)) continue;
    // The values it stands for, in memory of their own.
    PyObject* resolve = bit == n.is_conj ? n.resolve_conj : n.resolve_neg;
    out.owner = nb::steal(PyObject_CallMethodNoArgs(o, resolve));
    if (!out.owner.is_valid()) return false;
    o = out.owner.ptr();
  }
  nb::object layout = nb::steal(PyObject_GetAttr(o, n.layout));
  if (!layout.is_valid() || layout.ptr() != api.strided) return false;
  nb::object dtype = nb::steal(PyObject_GetAttr(o, n.dtype));
  if (!dtype.is_valid()) return false;
  bool known = false;
  for (size_t k = 0; k < api.dtype_count; ++k) {
    if (api.dtypes[k].first == dtype.ptr()) {
      out.dtype = api.dtypes[k].second;
      known = true;
      break;
    }
  }
  if (!known) return false;
  if (attr_true(o, n.is_cuda)) {
    nb::object index = nb::steal(PyObject_CallMethodNoArgs(o, n.get_device));
    if (!index.is_valid() || !PyLong_Check(index.ptr())) return false;
    out.cuda_index = static_cast<int>(PyLong_AsLong(index.ptr()));
    if (out.cuda_index < 0 || api.current_raw_stream == nullptr) return false;
    nb::object stream = nb::steal(PyObject_CallOneArg(api.current_raw_stream, index.ptr()));
    if (!stream.is_valid() || !PyLong_Check(stream.ptr())) return false;
    out.stream = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(stream.ptr()));
    if (PyErr_Occurred()) return false;
  } else if (!attr_true(o, n.is_cpu)) {
    return false;
  }
  nb::object shape = nb::steal(PyObject_GetAttr(o, n.shape));
  if (!shape.is_valid() || !PyTuple_Check(shape.ptr())) return false;
  const size_t rank = static_cast<size_t>(PyTuple_GET_SIZE(shape.ptr()));
  std::span<int64_t> numbers = batch.numbers(2 * rank);
  nb::object stride = nb::steal(PyObject_CallMethodNoArgs(o, n.stride));
  if (!read_ints(shape.ptr(), numbers.first(rank)) ||
      !read_ints(stride.ptr(), numbers.subspan(rank))) {
    return false;
  }
  nb::object ptr = nb::steal(PyObject_CallMethodNoArgs(o, n.data_ptr));
  if (!ptr.is_valid() || !PyLong_Check(ptr.ptr())) return false;
  out.data = PyLong_AsVoidPtr(ptr.ptr());
  if (PyErr_Occurred()) return false;
  out.sizes = numbers.first(rank);
  out.strides = numbers.subspan(rank);
  return true;
}

}  // namespace

bool read_torch_tensor(nb::handle obj, InputBatch& batch, TorchTensorView& out) {
  const TorchApi* api = torch_api();
  if (api == nullptr || obj.type().ptr() != api->tensor_type) return false;
  if (read(obj, *api, batch, out)) return true;
  PyErr_Clear();
  return false;
}

}  // namespace pterun::python
