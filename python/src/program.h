#pragma once

#include <nanobind/nanobind.h>

namespace pterun::python {

/// Binds dtype, TensorInfo, MethodMeta, Program and load_program.
void init_program(nanobind::module_& m);

}  // namespace pterun::python
