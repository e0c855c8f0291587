#pragma once

#include <nanobind/nanobind.h>

#include "pterun/executor/runner.h"

namespace pterun::python {

/// The Python-visible tensor (pterun.Tensor): a result of a call, or a
/// host copy made by Tensor.from_host.
struct PyTensor {
  TensorResult t;
};

/// Binds pterun.Tensor (B20).
void init_tensor(nanobind::module_& m);

}  // namespace pterun::python
