#pragma once

#include <nanobind/nanobind.h>

#include <memory>

#include "pterun/program/program.h"

namespace pterun::python {

/// The Python-visible program (pterun.Program).
struct PyProgram {
  std::shared_ptr<const Program> program;
};

/// Bytes of a program or data file from a path (memory-mapped) or a
/// bytes-like object (read-only buffers used in place and kept alive,
/// writable ones copied).
std::shared_ptr<const format::DataBuffer> read_source(nanobind::handle src, const char* what);

/// Binds dtype, TensorInfo, MethodMeta, Program and load_program.
void init_program(nanobind::module_& m);

}  // namespace pterun::python
