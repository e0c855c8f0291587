#include "python/src/tensor.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/host_buffer.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/strided_copy.h"
#include "python/src/convert.h"
#include "python/src/numpy_api.h"

namespace nb = nanobind;

namespace pterun::python {
namespace {

nb::dlpack::dtype dl_dtype(DType d) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (d) {
    case DType::Bool: return make(dtype_code::Bool, 8);
    case DType::UInt8: return make(dtype_code::UInt, 8);
    case DType::UInt16: return make(dtype_code::UInt, 16);
    case DType::UInt32: return make(dtype_code::UInt, 32);
    case DType::UInt64: return make(dtype_code::UInt, 64);
    case DType::Int8: return make(dtype_code::Int, 8);
    case DType::Int16: return make(dtype_code::Int, 16);
    case DType::Int32: return make(dtype_code::Int, 32);
    case DType::Int64: return make(dtype_code::Int, 64);
    case DType::Float16: return make(dtype_code::Float, 16);
    case DType::Float32: return make(dtype_code::Float, 32);
    case DType::Float64: return make(dtype_code::Float, 64);
    case DType::BFloat16: return make(dtype_code::Bfloat, 16);
    case DType::Complex64: return make(dtype_code::Complex, 64);
    case DType::Complex128: return make(dtype_code::Complex, 128);
    default:
      throw_error(ErrorCode::InvalidType,
                  str_cat("Tensor: dtype ", dtype_name(d), " has no array equivalent"));
  }
}

constexpr int kDLCPU = 1, kDLCUDA = 2;

PyTypeObject* tensor_type = nullptr;  // pterun.Tensor, set by init_tensor()

// `self` of a Tensor method (TypeError for anything else).
PyTensor& tensor_of(nb::handle self) {
  PyTensor* p = as_tensor(self);
  if (p == nullptr) throw nb::type_error("expected a pterun.Tensor");
  return *p;
}

// The lowest and highest element offsets a strided view reaches (numel > 0).
std::pair<int64_t, int64_t> offset_range(std::span<const int64_t> sizes,
                                         std::span<const int64_t> strides) {
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t reach = (sizes[d] - 1) * strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

int64_t numel_of(std::span<const int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// A host copy of a GPU tensor with the same sizes and strides (the bytes
// its view spans). Waits for the whole device first when another library
// got the memory through __dlpack__ (docs/python-api.md, B20).
TensorResult download_copy(const PyTensor& p) {
  const TensorResult& t = p.t;
  const int index = cuda_index(t);
  TensorResult r;
  r.dtype = t.dtype;
  r.sizes = t.sizes;
  r.strides = t.strides.empty() ? ResultDims(contiguous_strides(t.sizes)) : t.strides;
  const size_t item = element_size(t.dtype);
  int64_t lo = 0, hi = -1;
  if (numel_of(r.sizes) > 0) std::tie(lo, hi) = offset_range(r.sizes, r.strides);
  const size_t bytes = static_cast<size_t>(hi - lo + 1) * item;
  auto buffer = std::make_shared<HostBuffer>(bytes);
  {
    nb::gil_scoped_release release;
    if (p.exported) backend::synchronize_device(index);
    backend::download(index, buffer->data(),
                      static_cast<const uint8_t*>(t.data) + lo * static_cast<int64_t>(item), bytes);
  }
  r.data = buffer->data() - lo * static_cast<int64_t>(item);
  r.storage = std::move(buffer);
  return r;
}

// `self` when it is on the host, else a new host pterun.Tensor copy.
nb::object host_tensor(nb::handle self) {
  PyTensor& p = tensor_of(self);
  if (cuda_index(p.t) < 0) return nb::borrow(self);
  return wrap_tensor(download_copy(p));
}

// Keeps a GPU tensor's memory alive for another library (DLPack capsule
// owner). When that library lets go it may still have work queued that
// uses the memory, on streams pterun does not know: wait for the device
// before the memory can be reused (B19).
struct ExportHold {
  std::shared_ptr<void> storage;
  int device = 0;
};

void release_export(void* ptr) noexcept {
  auto* hold = static_cast<ExportHold*>(ptr);
  try {
    backend::synchronize_device(hold->device);
  } catch (const std::exception&) {
    // The process is shutting down or the device failed: nothing to order.
  }
  delete hold;
}

nb::object numpy_view(nb::handle self) {
  PyTensor& pt = tensor_of(self);
  const TensorResult& t = pt.t;
  if (t.device_index >= 0) {
    throw nb::type_error(
        ("Tensor lives on " + t.device + ": call to_host() (or numpy()) for a host copy").c_str());
  }
  nb::object ml;
  if (t.dtype == DType::BFloat16) {
    ml = nb::steal(PyImport_ImportModule("ml_dtypes"));
    if (!ml.is_valid()) {
      PyErr_Clear();
      throw nb::type_error(
          "NumPy has no bfloat16: install ml_dtypes, or use DLPack (torch.from_dlpack)");
    }
  }
  nb::object array = nb::steal(make_numpy_array(t, self.ptr()));
  if (!array.is_valid()) throw nb::python_error();
  // BFloat16 comes as uint16 bits: reinterpret them with ml_dtypes' type.
  if (ml.is_valid()) return array.attr("view")(ml.attr("bfloat16"));
  return array;
}

std::string tensor_repr(nb::handle self) {
  PyTensor& pt = tensor_of(self);
  const TensorResult& t = pt.t;
  std::string head = "pterun.Tensor(shape=" + shape_text(t.sizes) +
                     ", dtype=" + std::string(dtype_name(t.dtype)) + ", device='" + t.device + "'";
  size_t numel = 1;
  for (int64_t s : t.sizes) numel *= static_cast<size_t>(s);
  if (numel <= 16 && t.dtype != DType::BFloat16) {
    try {
      nb::object arr = numpy_view(host_tensor(self));
      std::string values = nb::cast<std::string>(nb::str(arr.attr("tolist")()));
      return head + ", values=" + values + ")";
    } catch (const std::exception&) {
      PyErr_Clear();
    }
  }
  return head + ")";
}

// Tensor.from_host(data, device, *, dtype=None): a contiguous copy of
// `data` in memory pterun owns, on the host or GPU N. `dtype` reinterprets
// the raw elements (same item size), e.g. uint16 bit patterns as bfloat16
// for NumPy users.
PyTensor from_host(nb::handle data, const std::string& device, nb::handle dtype) {
  const int index = resolve_device(device);
  InputBatch batch;
  batch.reserve(1);
  convert_input(data, ValueKind::Tensor, InputSource{{}, 0, "Tensor.from_host"}, false, batch);
  wait_for_producers(batch);
  const InputArg& a = batch.args().front();
  TensorResult r;
  r.dtype = a.dtype;
  if (!dtype.is_none()) {
    DType d = nb::isinstance<nb::str>(dtype)
                  ? [&] {
                      auto found = dtype_from_name(nb::cast<std::string>(dtype));
                      if (!found) throw nb::type_error("Tensor.from_host: unknown dtype name");
                      return *found;
                    }()
                  : nb::cast<DType>(dtype);
    if (element_size(d) != element_size(a.dtype)) {
      throw nb::type_error(("Tensor.from_host: cannot view " + std::string(dtype_name(a.dtype)) +
                            " data as " + std::string(dtype_name(d)) + " (item sizes differ)")
                               .c_str());
    }
    r.dtype = d;
  }
  r.sizes.assign(a.sizes.begin(), a.sizes.end());
  r.strides = ResultDims(contiguous_strides(r.sizes));
  r.device = device_string(index);
  r.device_index = index;
  const size_t item = element_size(a.dtype);
  std::vector<int64_t> src_strides(a.strides.begin(), a.strides.end());
  if (src_strides.empty()) src_strides.assign(r.strides.begin(), r.strides.end());
  const bool src_on_gpu = a.device == Device::CUDA;
  const bool src_contiguous = std::ranges::equal(src_strides, r.strides);
  const size_t nbytes = r.nbytes();

  nb::gil_scoped_release release;  // `batch` keeps the source alive
  // A GPU source is first brought to the host (the bytes its view spans).
  const uint8_t* src = static_cast<const uint8_t*>(a.data);
  HostBuffer staged;
  if (src_on_gpu && nbytes > 0) {
    // The producer's queued writes first (B19).
    if (a.after_stream) backend::synchronize_stream(a.device_index, a.stream);
    auto [lo, hi] = offset_range(r.sizes, src_strides);
    staged = HostBuffer(static_cast<size_t>(hi - lo + 1) * item);
    backend::download(a.device_index, staged.data(), src + lo * static_cast<int64_t>(item),
                      staged.size());
    src = staged.data() - lo * static_cast<int64_t>(item);
  }
  if (index < 0) {
    auto buffer = std::make_shared<HostBuffer>(nbytes);
    if (nbytes > 0)
      kernels::strided_copy(buffer->data(), r.strides, src, src_strides, r.sizes, item);
    r.data = buffer->data();
    r.storage = std::move(buffer);
    return PyTensor{std::move(r)};
  }
  auto buffer = std::make_shared<backend::DeviceBuffer>(index, nbytes);
  if (nbytes > 0) {
    HostBuffer packed;
    if (!src_contiguous) {
      packed = HostBuffer(nbytes);
      kernels::strided_copy(packed.data(), r.strides, src, src_strides, r.sizes, item);
      src = packed.data();
    }
    backend::upload(index, buffer->data(), src, nbytes);
  }
  r.data = buffer->data();
  r.storage = std::move(buffer);
  return PyTensor{std::move(r)};
}

nb::object dlpack(nb::handle self, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                  nb::handle copy) {
  PyTensor& p = tensor_of(self);
  const int index = cuda_index(p.t);
  if (!stream.is_none() && !nb::isinstance<nb::int_>(stream)) {
    throw nb::type_error("Tensor.__dlpack__: stream must be an int or None");
  }
  nb::dict kwargs;
  if (!max_version.is_none()) kwargs["max_version"] = max_version;
  if (index >= 0 && !dl_device.is_none()) {
    int type = -1;
    try {
      type = nb::cast<int>(dl_device[0]);
    } catch (const std::exception&) {
      PyErr_Clear();
    }
    if (type == kDLCPU) {
      // The consumer wants host memory: that takes a copy.
      if (!copy.is_none() && !nb::cast<bool>(copy)) {
        throw nb::buffer_error(("Tensor.__dlpack__: the tensor lives on " + p.t.device +
                                "; dl_device=CPU needs a copy and copy=False was given")
                                   .c_str());
      }
      kwargs["dl_device"] = dl_device;
      return wrap_tensor(download_copy(p)).attr("__dlpack__")(**kwargs);
    }
  }
  if (!copy.is_none() && nb::cast<bool>(copy)) {
    throw nb::buffer_error(
        "Tensor.__dlpack__: copy=True is not supported; use Tensor.from_host for a copy");
  }
  if (!dl_device.is_none()) kwargs["dl_device"] = dl_device;
  std::vector<size_t> shape(p.t.sizes.begin(), p.t.sizes.end());
  std::vector<int64_t> strides(p.t.strides.begin(), p.t.strides.end());
  if (index < 0) {
    // Host memory: no stream to order.
    nb::ndarray<nb::array_api> view(p.t.data, shape.size(), shape.data(), self, strides.data(),
                                    dl_dtype(p.t.dtype), nb::device::cpu::value, 0);
    return nb::cast(view).attr("__dlpack__")(**kwargs);
  }
  // GPU memory. The consumer's `stream` (None, 1, 2 or a handle) must not
  // run before our pending writes; there are none: a call waits for its
  // work before it returns (B19) and from_host waits for its upload, so any
  // stream may use the memory at once. -1 (no ordering) is the same.
  p.exported = true;
  nb::capsule owner(new ExportHold{p.t.storage, index}, &release_export);
  nb::ndarray<nb::array_api> view(p.t.data, shape.size(), shape.data(), owner, strides.data(),
                                  dl_dtype(p.t.dtype), nb::device::cuda::value, index);
  return nb::cast(view).attr("__dlpack__")(**kwargs);
}

}  // namespace

PyTensor* as_tensor(nb::handle obj) {
  if (!PyObject_TypeCheck(obj.ptr(), tensor_type)) return nullptr;
  return nb::inst_ptr<PyTensor>(obj);
}

nb::object wrap_tensor(TensorResult&& t) {
  // The instance is built in place: nb::cast would look the type up per call.
  nb::object obj = nb::inst_alloc(nb::handle(reinterpret_cast<PyObject*>(tensor_type)));
  new (nb::inst_ptr<PyTensor>(obj)) PyTensor{std::move(t)};
  nb::inst_mark_ready(obj);
  return obj;
}

int cuda_index(const TensorResult& t) {
  return t.device_index;
}

void init_tensor(nb::module_& m) {
  nb::class_<PyTensor> cls(m, "Tensor", "A tensor produced by pterun (B20).");
  tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  cls.def_prop_ro("shape",
                  [](const PyTensor& p) {
                    nb::list l;
                    for (int64_t s : p.t.sizes) l.append(s);
                    return nb::tuple(l);
                  })
      .def_prop_ro("ndim", [](const PyTensor& p) { return p.t.sizes.size(); })
      .def_prop_ro("dtype", [](const PyTensor& p) { return p.t.dtype; })
      .def_prop_ro("dtype_name",
                   [](const PyTensor& p) { return std::string(dtype_name(p.t.dtype)); })
      .def_prop_ro("device", [](const PyTensor& p) { return p.t.device; })
      .def_prop_ro("nbytes", [](const PyTensor& p) { return p.t.nbytes(); })
      .def_prop_ro("data_ptr",
                   [](const PyTensor& p) { return reinterpret_cast<uintptr_t>(p.t.data); })
      .def("__len__",
           [](const PyTensor& p) {
             if (p.t.sizes.empty()) throw nb::type_error("len() of a 0-d tensor");
             return p.t.sizes[0];
           })
      .def("__repr__", [](nb::handle self) { return tensor_repr(self); })
      .def(
          "numpy", [](nb::handle self) { return numpy_view(host_tensor(self)); },
          "A NumPy array: a view of a CPU tensor's memory, a host copy of a GPU tensor.")
      .def(
          "__array__",
          [](nb::handle self, nb::handle dtype, nb::handle copy) {
            nb::object arr = numpy_view(self);
            if (!dtype.is_none()) arr = arr.attr("astype")(dtype);
            if (!copy.is_none() && nb::cast<bool>(copy)) arr = arr.attr("copy")();
            return arr;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none(),
          "CPU tensors only: a GPU tensor raises TypeError (use to_host() or numpy()).")
      .def("__dlpack__", &dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none(),
           "A DLPack capsule sharing this tensor's memory (versioned when max_version >= (1, "
           "0)). GPU results are complete when handed out, so `stream` needs no ordering; "
           "dl_device=(1, 0) on a GPU tensor gives a host copy.")
      .def("__dlpack_device__",
           [](const PyTensor& p) {
             const int index = cuda_index(p.t);
             return index < 0 ? nb::make_tuple(kDLCPU, 0) : nb::make_tuple(kDLCUDA, index);
           })
      .def(
          "to_host", [](nb::handle self) { return host_tensor(self); },
          "This tensor on the host: a CPU tensor returns itself, a GPU tensor a copy (after "
          "waiting for the device when its memory was handed to another library).")
      .def("item",
           [](nb::handle self) {
             PyTensor& p = tensor_of(self);
             if (p.t.nbytes() != element_size(p.t.dtype)) {
               throw nb::value_error("item() needs a tensor with exactly one element");
             }
             return numpy_view(host_tensor(self)).attr("reshape")(nb::make_tuple()).attr("item")();
           })
      .def("tolist", [](nb::handle self) { return numpy_view(host_tensor(self)).attr("tolist")(); })
      .def_static("from_host", &from_host, nb::arg("data"), nb::arg("device") = "cpu",
                  nb::kw_only(), nb::arg("dtype") = nb::none(),
                  "A contiguous copy of `data` (buffer, DLPack object, pterun.Tensor) on `device` "
                  "('cpu', 'cuda', 'cuda:N'). `dtype` reinterprets elements of the same size "
                  "(uint16 bits as 'bfloat16').");
}

}  // namespace pterun::python
