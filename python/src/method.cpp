#include "python/src/method.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>

#include "pterun/core/error.h"
#include "pterun/executor/runner.h"
#include "python/src/convert.h"
#include "python/src/program.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pterun::python {
namespace {

struct PyMethod {
  std::shared_ptr<MethodRunner> runner;
  std::string device;
};

/// Method options for a device string (B25: a CUDA device without a GPU is
/// a RuntimeError saying why).
MethodOptions method_options(const std::string& device, bool cuda_graphs, std::string& canonical) {
  const int index = parse_device(device);
  canonical = device_string(index);
  MethodOptions o;
  o.cuda_graphs = cuda_graphs;
  if (index >= 0) {
    o.device = kernels::Device::CUDA;
    o.device_index = index;
  }
  return o;
}

PyMethod make_method(std::shared_ptr<const Program> program, const std::string& name,
                     const std::string& device, bool cuda_graphs) {
  std::string canonical;
  MethodOptions options = method_options(device, cuda_graphs, canonical);
  std::unique_ptr<Method> m;
  {
    nb::gil_scoped_release release;
    m = Method::load(std::move(program), name, options);
  }
  return PyMethod{MethodRunner::create(std::move(m)), canonical};
}

nb::list call_method(PyMethod& self, nb::handle inputs, bool clone) {
  Method& m = self.runner->method();
  InputBatch batch;
  convert_inputs(inputs, m, m.num_inputs(), batch);
  std::vector<OutputValue> out;
  {
    nb::gil_scoped_release release;
    out = self.runner->call(batch.args(), clone);
  }
  return to_python(std::move(out));
}

/// A program plus its lazily loaded methods (executorch.runtime's Module).
struct PyModule {
  std::shared_ptr<const Program> program;
  std::string device;
  bool cuda_graphs = true;
  std::map<std::string, PyMethod> methods;

  PyMethod& get(const std::string& name) {
    auto it = methods.find(name);
    if (it == methods.end()) {
      it = methods.emplace(name, make_method(program, name, device, cuda_graphs)).first;
    }
    return it->second;
  }

  nb::list run(const std::string& name, nb::handle inputs, bool clone) {
    PyMethod& pm = get(name);
    Method& m = pm.runner->method();
    // Not a list, or more inputs than the method takes: an error before
    // anything changes.
    const bool sequence = PyList_Check(inputs.ptr()) || PyTuple_Check(inputs.ptr());
    if (!sequence || static_cast<size_t>(PySequence_Size(inputs.ptr())) > m.num_inputs()) {
      InputBatch rejected;
      convert_inputs(inputs, m, m.num_inputs(), rejected);  // raises the TypeError or ValueError
    }
    InputBatch batch;
    try {
      convert_inputs(inputs, m, m.num_inputs(), batch);
    } catch (...) {
      // An unreadable input: the inputs of this failed call are not trusted
      // until passed again (B13).
      size_t n = static_cast<size_t>(PySequence_Size(inputs.ptr()));
      {
        nb::gil_scoped_release release;
        pm.runner->forget_leading(n);
      }
      throw;
    }
    std::vector<OutputValue> out;
    {
      nb::gil_scoped_release release;
      out = pm.runner->call_leading(batch.args(), clone);
    }
    return to_python(std::move(out));
  }

  nb::list plan_execute(const std::string& name, bool clone) {
    PyMethod& pm = get(name);
    std::vector<OutputValue> out;
    {
      nb::gil_scoped_release release;
      out = pm.runner->execute_and_collect(clone);
    }
    return to_python(std::move(out));
  }
};

}  // namespace

nb::object load_method(const PyProgram& program, const std::string& name, const std::string& device,
                       bool cuda_graphs) {
  return nb::cast(make_method(program.program, name, device, cuda_graphs));
}

void init_method(nb::module_& m) {
  nb::class_<PyMethod>(m, "Method", "A loaded method of a program.")
      .def(
          "set_inputs",
          [](PyMethod& self, nb::handle inputs) {
            Method& method = self.runner->method();
            InputBatch batch;
            convert_inputs(inputs, method, method.num_inputs(), batch);
            nb::gil_scoped_release release;
            self.runner->set_inputs(batch.args());
          },
          "inputs"_a, "Checks every input, then installs them all (B9).")
      .def(
          "execute",
          [](PyMethod& self) {
            nb::gil_scoped_release release;
            self.runner->execute();
          },
          "Runs the method on the installed inputs (releases the GIL).")
      .def(
          "get_outputs",
          [](PyMethod& self, bool clone) {
            std::vector<OutputValue> out;
            {
              nb::gil_scoped_release release;
              out = self.runner->get_outputs(clone);
            }
            return to_python(std::move(out));
          },
          nb::kw_only(), "clone_outputs"_a = true)
      .def("__call__", &call_method, "inputs"_a, nb::kw_only(), "clone_outputs"_a = true,
           "set_inputs + execute + get_outputs.")
      .def("call", &call_method, "inputs"_a, nb::kw_only(), "clone_outputs"_a = true)
      .def("method_meta", [](PyMethod& self) { return self.runner->method().meta(); })
      .def(
          "get_attribute",
          [](PyMethod& self, const std::string& name) {
            TensorResult r;
            {
              nb::gil_scoped_release release;
              r = self.runner->attribute(name);
            }
            return to_python(OutputValue(std::move(r)));
          },
          "name"_a, "A copy of the named buffer `name` as it is now.")
      .def_prop_ro("name", [](PyMethod& self) { return self.runner->method().name(); })
      .def_prop_ro("device", [](PyMethod& self) { return self.device; })
      .def("__repr__", [](PyMethod& self) {
        return "Method(name='" + self.runner->method().name() + "', device='" + self.device + "')";
      });

  nb::class_<PyModule>(m, "Module", "A program with lazily loaded methods.")
      .def(
          "__init__",
          [](PyModule* self, nb::handle src, nb::handle data, const std::string& device,
             bool cuda_graphs) {
            auto program_bytes = read_source(src, "Module(src)");
            auto data_bytes = data.is_none() ? nullptr : read_source(data, "Module(data=)");
            std::string canonical;
            method_options(device, cuda_graphs, canonical);
            std::shared_ptr<const Program> program;
            {
              nb::gil_scoped_release release;
              program = Program::load(std::move(program_bytes), std::move(data_bytes));
            }
            new (self) PyModule{std::move(program), canonical, cuda_graphs, {}};
          },
          "src"_a, nb::kw_only(), "data"_a = nb::none(), "device"_a = "cpu", "cuda_graphs"_a = true)
      .def_prop_ro("method_names", [](PyModule& self) { return self.program->method_names(); })
      .def(
          "method_meta",
          [](PyModule& self, const std::string& name) { return self.program->method_meta(name); },
          "name"_a)
      .def(
          "forward",
          [](PyModule& self, nb::handle inputs, bool clone) {
            return self.run("forward", inputs, clone);
          },
          "inputs"_a, nb::kw_only(), "clone_outputs"_a = true)
      .def(
          "__call__",
          [](PyModule& self, nb::handle inputs, bool clone) {
            return self.run("forward", inputs, clone);
          },
          "inputs"_a, nb::kw_only(), "clone_outputs"_a = true)
      .def("run_method", &PyModule::run, "name"_a, "inputs"_a, nb::kw_only(),
           "clone_outputs"_a = true)
      .def("plan_execute", &PyModule::plan_execute, "name"_a = "forward", nb::kw_only(),
           "clone_outputs"_a = true)
      .def("__repr__", [](PyModule& self) {
        std::string names;
        for (const auto& n : self.program->method_names()) {
          names += (names.empty() ? "'" : ", '") + n + "'";
        }
        return "Module(methods=[" + names + "], device='" + self.device + "')";
      });
}

}  // namespace pterun::python
