#pragma once

#include <nanobind/nanobind.h>

namespace pterun::python {

/// Binds load_bundled_program, BundledProgram, BundledTestCase, CaseResult.
void init_bundled(nanobind::module_& m);

}  // namespace pterun::python
