#pragma once

#include <nanobind/nanobind.h>

namespace pterun::python {

/// Registers pterun.ProgramError and the one mapping from pterun::Error
/// codes to Python exception types.
void init_errors(nanobind::module_& m);

/// In a catch block of a CPython slot function (Method's tp_call): sets
/// the Python error for the C++ exception being handled exactly as a bound
/// function's dispatch would (nanobind's translations and ours).
void set_error_from_current_exception() noexcept;

}  // namespace pterun::python
