#pragma once

#include <nanobind/nanobind.h>

namespace pterun::python {

/// Binds stats(), reset_stats(), set_num_threads(), get_num_threads() and
/// cuda_device_count().
void init_runtime(nanobind::module_& m);

}  // namespace pterun::python
