// The _pterun extension module: one init function per bound area.

#include <nanobind/nanobind.h>

#include "python/src/bundled.h"
#include "python/src/errors.h"
#include "python/src/method.h"
#include "python/src/program.h"
#include "python/src/runtime.h"
#include "python/src/tensor.h"
#include "python/src/testing.h"

NB_MODULE(_pterun, m) {
  m.doc() = "pterun: run ExecuTorch programs (.pte) without PyTorch";
  m.attr("__version__") = PTERUN_VERSION;
  pterun::python::init_errors(m);
  pterun::python::init_tensor(m);
  pterun::python::init_program(m);
  pterun::python::init_method(m);
  pterun::python::init_bundled(m);
  pterun::python::init_runtime(m);
  pterun::python::init_testing(m);
}
