#pragma once

#include <nanobind/nanobind.h>

namespace pterun::python {

/// Binds _testing_call_kernel: runs one registered kernel on NumPy-built
/// arguments, for the per-kernel tests (tests/python/kernels).
void init_testing(nanobind::module_& m);

}  // namespace pterun::python
