#pragma once

#include <nanobind/nanobind.h>

namespace pterun::python {

/// Registers pterun.ProgramError and the one mapping from pterun::Error
/// codes to Python exception types.
void init_errors(nanobind::module_& m);

}  // namespace pterun::python
