#pragma once

#include <nanobind/nanobind.h>

#include <string>

namespace pterun::python {

struct PyProgram;

/// Program.load_method(name, *, device, cuda_graphs, allow_tf32).
nanobind::object load_method(const PyProgram& program, const std::string& name,
                             const std::string& device, bool cuda_graphs, bool allow_tf32);

/// Binds Method and Module.
void init_method(nanobind::module_& m);

}  // namespace pterun::python
