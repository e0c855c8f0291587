// DLPack inputs: an object with __dlpack__ (numpy, torch, CuPy, JAX, ...)
// asked for a capsule (versioned first, with the legacy CUDA stream for GPU
// memory), the capsule checked before nanobind imports it, and its tensor
// read in place on the CPU or its GPU (docs/python-api.md, B2, B19).

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <typeinfo>
#include <utility>
#include <vector>

#include "pterun/backend/device.h"
#include "pterun/backend/device_info.h"
#include "pterun/core/tensor.h"
#include "pterun/core/text.h"
#include "python/src/convert_util.h"

namespace pterun::python::convert_detail {
namespace {

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

// The producer's (device type, device id), from __dlpack_device__; a CPU
// array when it has none.
std::pair<int, int> dlpack_device(nb::handle obj, const InputSource& source) {
  if (!PyObject_HasAttrString(obj.ptr(), "__dlpack_device__")) return {kDLCPU, 0};
  nb::object d;
  try {
    d = obj.attr("__dlpack_device__")();
  } catch (nb::python_error& e) {
    reraise(e, source);  // the producer's own error, as it raised it (B6)
  }
  try {
    // Anything but a pair of ints is the producer's mistake, said as such
    // (not an IndexError from looking inside it).
    if (!PyTuple_Check(d.ptr()) || PyTuple_GET_SIZE(d.ptr()) != 2) throw std::bad_cast();
    return {nb::cast<int>(d[0]), nb::cast<int>(d[1])};
  } catch (nb::python_error&) {
    PyErr_Clear();
    raise(PyExc_TypeError, source, "__dlpack_device__() did not return (device_type, device_id)");
  } catch (const std::exception&) {
    PyErr_Clear();
    raise(PyExc_TypeError, source, "__dlpack_device__() did not return (device_type, device_id)");
  }
}

// The two capsule payloads of DLPack (dlpack.h's DLManagedTensor and
// DLManagedTensorVersioned) around nanobind's DLTensor.
struct ManagedTensor {
  nb::dlpack::dltensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor*);
};
struct ManagedTensorVersioned {
  uint32_t major, minor;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned*);
  uint64_t flags;
  nb::dlpack::dltensor dl_tensor;
};

// Refuses a capsule whose fields nanobind's import would trust to read
// memory (a null shape, a rank it cannot hold) or that pterun cannot take
// (another major version, negative sizes). Other objects are left to
// nanobind's cast, which says what is wrong.
void check_capsule(nb::handle capsule, const InputSource& source) {
  if (!PyCapsule_CheckExact(capsule.ptr())) return;
  const char* name = PyCapsule_GetName(capsule.ptr());
  if (name == nullptr) {
    PyErr_Clear();
    name = "";
  }
  void* p = PyCapsule_GetPointer(capsule.ptr(), name);
  if (p == nullptr) PyErr_Clear();
  const nb::dlpack::dltensor* t = nullptr;
  if (p != nullptr && std::strcmp(name, "dltensor_versioned") == 0) {
    const auto* mt = static_cast<const ManagedTensorVersioned*>(p);
    if (mt->major != 1) {
      raise(PyExc_TypeError, source,
            "its DLPack capsule has version " + std::to_string(mt->major) + "." +
                std::to_string(mt->minor) + " (pterun reads version 1)");
    }
    t = &mt->dl_tensor;
  } else if (p != nullptr && std::strcmp(name, "dltensor") == 0) {
    t = &static_cast<const ManagedTensor*>(p)->dl_tensor;
  } else {
    raise(PyExc_TypeError, source,
          "__dlpack__() returned a capsule named '" + printable(name) +
              "', not an unused 'dltensor' or 'dltensor_versioned' capsule");
  }
  if (t->ndim < 0 || static_cast<size_t>(t->ndim) > kMaxRank) {
    raise(PyExc_ValueError, source,
          "its DLPack tensor has rank " + std::to_string(t->ndim) + " (at most " +
              std::to_string(kMaxRank) + ")");
  }
  if (t->ndim > 0 && t->shape == nullptr) {
    raise(PyExc_ValueError, source, "its DLPack tensor has no shape");
  }
  for (int32_t d = 0; d < t->ndim; ++d) {
    if (t->shape[d] < 0) raise(PyExc_ValueError, source, "its DLPack shape has a negative size");
  }
}

}  // namespace

void convert_dlpack(nb::handle obj, const InputSource& source, InputBatch& batch) {
  auto [device_type, device_id] = dlpack_device(obj, source);
  const bool cuda_memory =
      device_type == kDLCUDA || device_type == kDLCUDAHost || device_type == kDLCUDAManaged;
  if (!cuda_memory && device_type != kDLCPU) {
    raise(PyExc_TypeError, source,
          "the array lives on DLPack device type " + std::to_string(device_type) +
              ", which pterun cannot read (it reads the CPU and CUDA GPUs)");
  }
  if (cuda_memory && !backend::built_with_cuda()) {
    raise(PyExc_TypeError, source,
          "the array lives on a GPU and this build of pterun has no CUDA support: copy it to "
          "the host first");
  }
  auto held = std::make_shared<GilHeld<nb::ndarray<nb::ro>>>();
  // Ask the producer for a capsule ourselves, so that its errors keep their
  // Python type and message (B6); prefer a versioned capsule (producers
  // predating max_version raise TypeError: ask again without). For GPU
  // memory pass stream=1, the legacy default stream (the array API forbids
  // 0, torch refuses 2): the producer orders its pending writes before that
  // stream, and the method orders its reads after it, on the GPU (B19).
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
      if (!e.matches(PyExc_TypeError) || r + 1 == requests.size()) reraise(e, source);
    }
  }
  check_capsule(capsule, source);
  try {
    held->value = nb::cast<nb::ndarray<nb::ro>>(capsule);
  } catch (const std::exception& e) {
    PyErr_Clear();
    raise(PyExc_TypeError, source, std::string("cannot import its DLPack capsule: ") + e.what());
  }
  const auto& a = held->value;
  const int type = a.device_type();
  if (type != kDLCPU && type != kDLCUDA && type != kDLCUDAHost && type != kDLCUDAManaged) {
    raise(PyExc_TypeError, source,
          "the array's DLPack capsule is on device type " + std::to_string(type) +
              ", which pterun cannot read");
  }
  if (type != kDLCPU && type != kDLCUDA) {
    // Managed and pinned host memory are read as host memory, once the
    // producer's writes are done: a host wait.
    batch.wait_legacy_streams.push_back(device_id);
  }
  DType dtype;
  if (!dlpack_dtype(a.dtype(), dtype)) {
    raise(PyExc_TypeError, source, "the array's DLPack dtype is not supported");
  }
  const size_t rank = a.ndim();
  std::span<int64_t> shape = batch.numbers(2 * rank);
  for (size_t d = 0; d < rank; ++d) {
    shape[d] = static_cast<int64_t>(a.shape(d));
    shape[rank + d] = a.stride(d);
  }
  InputArg& arg = batch.add(
      InputArg::tensor(a.data(), dtype, shape.first(rank), shape.subspan(rank), std::move(held)));
  if (type == kDLCUDA) {
    place_on(arg, a.device_id());
    arg.ready_after(kDLPackLegacyStream);
  }
}

}  // namespace pterun::python::convert_detail
