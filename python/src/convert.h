#pragma once

// All conversions between Python objects and pterun values live here:
// buffer-protocol objects, pterun.Tensor and numbers to InputArg (B2, B3),
// and call results back to Python objects (B16).

#include <nanobind/nanobind.h>

#include <deque>
#include <string>
#include <vector>

#include "pterun/executor/input.h"
#include "pterun/executor/runner.h"

namespace pterun::python {

/// A Python buffer (Py_buffer) held by C++; released under the GIL.
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

/// Storage for converted inputs: InputArg spans point into it.
struct InputBatch {
  std::vector<InputArg> args;
  std::deque<std::vector<int64_t>> shapes;  // sizes and strides (stable addresses)

  // The pre-run wait of B19, done once by wait_for_producers(). GPUs whose
  // legacy default stream DLPack producers ordered their pending writes
  // before (we pass stream=1), and GPUs holding pterun results that were
  // handed to another library through __dlpack__ (it may write them on any
  // stream: the whole device is waited for).
  std::vector<int> wait_legacy_streams;
  std::vector<int> wait_devices;
};

/// Parses a device string: "cpu" gives -1, "cuda" 0, "cuda:N" N. ValueError
/// for anything else; RuntimeError saying why when CUDA is not usable (B25)
/// or GPU N does not exist.
int parse_device(const std::string& device);

/// "cpu" for -1, else "cuda:N".
std::string device_string(int cuda_index);

/// Converts `obj` for an input declared as `declared` (B2, B3). Errors keep
/// their Python type and start with `prefix` ("input i of method 'name': ",
/// B6).
void convert_input(nanobind::handle obj, ValueKind declared, const std::string& prefix,
                   InputBatch& batch);

/// Waits (once per GPU, without the GIL) for the writes other libraries may
/// still have queued on the batch's CUDA inputs (B19); nothing for host
/// inputs and for pterun results never handed out. Counted in device_syncs.
void wait_for_producers(InputBatch& batch);

/// Converts a call's inputs (a list or tuple, else TypeError), then
/// wait_for_producers().
InputBatch convert_inputs(nanobind::handle inputs, const Method& method, size_t max_count);

/// The Python object for one output: pterun.Tensor, int, float, bool, str
/// or None.
nanobind::object to_python(OutputValue&& value);

/// Python result list of a call.
nanobind::list to_python(std::vector<OutputValue>&& values);

}  // namespace pterun::python
