#pragma once

// All conversions between Python objects and pterun values: buffer-protocol
// objects, pterun.Tensor and numbers to InputArg (convert.cpp; DLPack
// producers in convert_dlpack.cpp; docs/python-api.md, B2, B3), and call
// results back to Python objects (B16).

#include <nanobind/nanobind.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pterun/executor/input.h"
#include "pterun/executor/runner.h"
#include "python/src/input_batch.h"

namespace pterun::python {

/// A Python buffer (Py_buffer) held by C++ beyond a call (an input a method
/// uses in place, B4); released under the GIL from any thread.
struct HeldBuffer {
  Py_buffer view{};
  HeldBuffer() = default;
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;
  ~HeldBuffer() {
    nanobind::gil_scoped_acquire gil;
    PyBuffer_Release(&view);
  }
};

/// Names an input in error messages (B6): "input 2 of method 'forward': ",
/// or `label` + ": " when a label is given. The text is built only when an
/// error is raised.
struct InputSource {
  std::string_view method;
  size_t index = 0;
  std::string_view label;

  std::string prefix() const;
};

/// Parses a device string: "cpu" gives -1, "cuda" 0, "cuda:N" N. ValueError
/// for anything else; RuntimeError saying why when CUDA is not usable (B25)
/// or GPU N does not exist.
int resolve_device(const std::string& device);

/// "cpu" for -1, else "cuda:N".
std::string device_string(int cuda_index);

/// Converts `obj` for an input declared as `declared` (B2, B3) and appends
/// it to `batch`. `kept`: the method may use the memory in place after the
/// call (Method::input_may_alias), so the InputArg carries what keeps it
/// alive. Errors keep their Python type and start with `source`'s prefix
/// (B6).
void convert_input(nanobind::handle obj, ValueKind declared, const InputSource& source, bool kept,
                   InputBatch& batch);

/// Waits (once per GPU, without the GIL) for the writes other libraries may
/// still have queued on the batch's CUDA inputs (B19); nothing for host
/// inputs and for pterun results never handed out. Counted in device_syncs.
void wait_for_producers(InputBatch& batch);

/// Converts a call's inputs (a list or tuple, else TypeError; ValueError
/// for more than `max_count`) into `batch`, then wait_for_producers().
void convert_inputs(nanobind::handle inputs, const Method& method, size_t max_count,
                    InputBatch& batch);

/// The Python object for one output: pterun.Tensor, int, float, bool, str
/// or None.
nanobind::object to_python(OutputValue&& value);

/// Python result list of a call.
nanobind::list to_python(std::vector<OutputValue>&& values);

}  // namespace pterun::python
