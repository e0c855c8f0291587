#include "python/src/tensor.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>

#include "pterun/core/error.h"
#include "pterun/core/host_buffer.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/strided_copy.h"
#include "python/src/convert.h"

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

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

nb::object numpy_view(nb::handle self) {
  PyTensor& pt = nb::cast<PyTensor&>(self);
  const TensorResult& t = pt.t;
  if (t.device != "cpu") {
    throw nb::type_error("Tensor lives on a GPU: call to_host() first");
  }
  if (t.dtype == DType::BFloat16) {
    nb::object ml = nb::steal(PyImport_ImportModule("ml_dtypes"));
    if (!ml.is_valid()) {
      PyErr_Clear();
      throw nb::type_error(
          "NumPy has no bfloat16: install ml_dtypes, or use DLPack (torch.from_dlpack)");
    }
    // View the bits as uint16 and reinterpret with ml_dtypes' bfloat16.
    std::vector<size_t> shape(t.sizes.begin(), t.sizes.end());
    std::vector<int64_t> strides(t.strides.begin(), t.strides.end());
    nb::ndarray<nb::numpy> bits(t.data, shape.size(), shape.data(), self, strides.data(),
                                nb::dtype<uint16_t>());
    return nb::cast(bits).attr("view")(ml.attr("bfloat16"));
  }
  std::vector<size_t> shape(t.sizes.begin(), t.sizes.end());
  std::vector<int64_t> strides(t.strides.begin(), t.strides.end());
  nb::ndarray<nb::numpy> arr(t.data, shape.size(), shape.data(), self, strides.data(),
                             dl_dtype(t.dtype));
  return nb::cast(arr);
}

std::string tensor_repr(nb::handle self) {
  PyTensor& pt = nb::cast<PyTensor&>(self);
  const TensorResult& t = pt.t;
  std::string head = "pterun.Tensor(shape=" + shape_text(t.sizes) +
                     ", dtype=" + std::string(dtype_name(t.dtype)) + ", device='" + t.device + "'";
  size_t numel = 1;
  for (int64_t s : t.sizes) numel *= static_cast<size_t>(s);
  if (t.device == "cpu" && numel <= 16 && t.dtype != DType::BFloat16) {
    try {
      nb::object arr = numpy_view(self);
      std::string values = nb::cast<std::string>(nb::str(arr.attr("tolist")()));
      return head + ", values=" + values + ")";
    } catch (const std::exception&) {
      PyErr_Clear();
    }
  }
  return head + ")";
}

// Tensor.from_host(data, device, *, dtype=None): a copy of `data` in
// memory pterun owns. `dtype` reinterprets the raw elements (same item
// size), e.g. uint16 bit patterns as bfloat16 for NumPy users.
PyTensor from_host(nb::handle data, const std::string& device, nb::handle dtype) {
  if (device != "cpu") {
    throw std::runtime_error("Tensor.from_host: device '" + device +
                             "' is not available in this build");
  }
  InputBatch batch;
  convert_input(data, ValueKind::Tensor, "Tensor.from_host: ", batch);
  const InputArg& a = batch.args.front();
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
  r.strides.resize(r.sizes.size());
  int64_t stride = 1;
  for (size_t i = r.sizes.size(); i-- > 0;) {
    r.strides[i] = stride;
    stride *= r.sizes[i] == 0 ? 1 : r.sizes[i];
  }
  auto buffer = std::make_shared<HostBuffer>(r.nbytes());
  std::vector<int64_t> src_strides(a.strides.begin(), a.strides.end());
  if (src_strides.empty()) src_strides = r.strides;
  kernels::strided_copy(buffer->data(), r.strides, a.data, src_strides, r.sizes,
                        element_size(a.dtype));
  r.data = buffer->data();
  r.storage = std::move(buffer);
  return PyTensor{std::move(r)};
}

}  // namespace

void init_tensor(nb::module_& m) {
  nb::class_<PyTensor>(m, "Tensor", "A tensor produced by pterun (B20).")
      .def_prop_ro("shape",
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
          "numpy", [](nb::handle self) { return numpy_view(self); },
          "A NumPy array sharing this tensor's memory (CPU tensors only).")
      .def(
          "__array__",
          [](nb::handle self, nb::handle dtype, nb::handle copy) {
            nb::object arr = numpy_view(self);
            if (!dtype.is_none()) arr = arr.attr("astype")(dtype);
            if (!copy.is_none() && nb::cast<bool>(copy)) arr = arr.attr("copy")();
            return arr;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def(
          "__dlpack__",
          [](nb::handle self, nb::handle stream, nb::handle max_version, nb::handle dl_device,
             nb::handle copy) {
            PyTensor& p = nb::cast<PyTensor&>(self);
            if (!copy.is_none() && nb::cast<bool>(copy)) {
              throw nb::buffer_error(
                  "Tensor.__dlpack__: copy=True is not supported; "
                  "use Tensor.from_host for a copy");
            }
            (void)stream;  // host memory: no stream ordering needed
            std::vector<size_t> shape(p.t.sizes.begin(), p.t.sizes.end());
            std::vector<int64_t> strides(p.t.strides.begin(), p.t.strides.end());
            nb::ndarray<nb::array_api> view(p.t.data, shape.size(), shape.data(), self,
                                            strides.data(), dl_dtype(p.t.dtype),
                                            nb::device::cpu::value, 0);
            nb::object exporter = nb::cast(view);
            nb::dict kwargs;
            if (!max_version.is_none()) kwargs["max_version"] = max_version;
            if (!dl_device.is_none()) kwargs["dl_device"] = dl_device;
            return exporter.attr("__dlpack__")(**kwargs);
          },
          nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none(),
          "A DLPack capsule sharing this tensor's memory (versioned when max_version >= (1, 0)).")
      .def("__dlpack_device__",
           [](const PyTensor& p) {
             return p.t.device == "cpu" ? nb::make_tuple(1, 0) : nb::make_tuple(2, 0);
           })
      .def(
          "to_host", [](nb::handle self) { return nb::borrow(self); },
          "This tensor on the host (a CPU tensor returns itself).")
      .def("item",
           [](nb::handle self) {
             PyTensor& p = nb::cast<PyTensor&>(self);
             if (p.t.nbytes() != element_size(p.t.dtype)) {
               throw nb::value_error("item() needs a tensor with exactly one element");
             }
             return numpy_view(self).attr("reshape")(nb::make_tuple()).attr("item")();
           })
      .def("tolist", [](nb::handle self) { return numpy_view(self).attr("tolist")(); })
      .def_static("from_host", &from_host, nb::arg("data"), nb::arg("device") = "cpu",
                  nb::kw_only(), nb::arg("dtype") = nb::none(),
                  "A copy of `data` (buffer, pterun.Tensor) on `device`. `dtype` reinterprets "
                  "elements of the same size (uint16 bits as 'bfloat16').");
}

}  // namespace pterun::python
