#pragma once

// What the input conversions (convert.cpp, convert_dlpack.cpp) share:
// raising with the input named, keeping a Python object alive for an
// input, placing an input on a GPU, and the DLPack constants.

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <string>

#include "python/src/convert.h"
#include "python/src/input_batch.h"

namespace pterun::python::convert_detail {

namespace nb = nanobind;

// DLPack device types (dlpack.h's DLDeviceType).
constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;
// The `stream` pterun passes to a CUDA producer's __dlpack__.
constexpr uintptr_t kDLPackLegacyStream = 1;

/// Raises `type` with the input named before `msg`.
[[noreturn]] void raise(PyObject* type, const InputSource& source, const std::string& msg);

/// The message of a Python exception, str(exc) (python_error::what() adds
/// the traceback).
std::string message_of(const nb::python_error& e);

/// Raises `e` again, its type kept, with the input named.
[[noreturn]] void reraise(nb::python_error& e, const InputSource& source);

/// A Python value (an imported DLPack tensor, an array) kept by C++ beyond
/// a call, dropped under the GIL from any thread.
template <typename T>
struct GilHeld {
  T value;
  ~GilHeld() {
    nb::gil_scoped_acquire gil;
    value = T();
  }
};

/// Keeps `obj`, whose memory an input reads, alive: as the InputArg's
/// keep-alive when the method may keep using the memory after the call
/// (`kept`), else with the batch (nothing allocated).
std::shared_ptr<void> hold_object(nb::handle obj, bool kept, InputBatch& batch);

/// Marks `a` as memory of GPU `index` (host memory when index < 0).
void place_on(InputArg& a, int index);

/// An object with __dlpack__ (convert_dlpack.cpp): its tensor, on the CPU
/// or a CUDA GPU, read in place.
void convert_dlpack(nb::handle obj, const InputSource& source, InputBatch& batch);

}  // namespace pterun::python::convert_detail
