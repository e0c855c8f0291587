#include "python/src/method.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/executor/runner.h"
#include "python/src/convert.h"
#include "python/src/errors.h"
#include "python/src/program.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pterun::python {
namespace {

struct PyMethod {
  std::shared_ptr<MethodRunner> runner;
  std::string device;
};

/// Method options for a device string (docs/python-api.md, B25: a CUDA device without a GPU is
/// a RuntimeError saying why).
MethodOptions method_options(const std::string& device, bool cuda_graphs, bool allow_tf32,
                             std::string& canonical) {
  const int index = resolve_device(device);
  canonical = device_string(index);
  MethodOptions o;
  o.cuda_graphs = cuda_graphs;
  o.allow_tf32 = allow_tf32;
  if (index >= 0) {
    o.device = Device::CUDA;
    o.device_index = index;
  }
  return o;
}

PyMethod make_method(std::shared_ptr<const Program> program, const std::string& name,
                     const std::string& device, bool cuda_graphs, bool allow_tf32) {
  std::string canonical;
  MethodOptions options = method_options(device, cuda_graphs, allow_tf32, canonical);
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
  // The outputs pass through a vector whose memory each thread keeps for
  // its next call (no heap block per call). Taken, not shared: Python code
  // run while results are wrapped (a finaliser) may call again.
  thread_local std::vector<OutputValue> spare;  // empty, with capacity
  std::vector<OutputValue> out = std::move(spare);
  {
    nb::gil_scoped_release release;
    self.runner->call(batch.args(), clone, out);
  }
  nb::list result = to_python(std::move(out));
  out.clear();  // a result held here would keep its buffer from reuse (B18)
  spare = std::move(out);
  return result;
}

/// A program plus its lazily loaded methods (executorch.runtime's Module).
struct PyModule {
  std::shared_ptr<const Program> program;
  std::string device;
  bool cuda_graphs = true;
  bool allow_tf32 = false;
  std::map<std::string, PyMethod> methods;

  PyMethod& get(const std::string& name) {
    auto it = methods.find(name);
    if (it == methods.end()) {
      it = methods.emplace(name, make_method(program, name, device, cuda_graphs, allow_tf32)).first;
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

nb::list call_module(PyModule& self, nb::handle inputs, bool clone) {
  return self.run("forward", inputs, clone);
}

// ---- Method.__call__ and Module.__call__ as the types' tp_call -------------
// With __call__ only in a type's dict, CPython looks it up on every call,
// packs the arguments once more and goes through nanobind's overload and
// keyword handling: about 400 instructions of an `add` call that takes
// 1 µs. The plain forms, m(inputs) and m(inputs, clone_outputs=<bool>), run
// here; every other call goes to the bound __call__, so nanobind still
// decides all other signatures and their errors.

PyObject* clone_outputs_key = nullptr;  // interned "clone_outputs"

// The arguments of a plain call; false for any other call.
bool plain_call_args(PyObject* args, PyObject* kwargs, PyObject*& inputs, bool& clone) {
  if (PyTuple_GET_SIZE(args) != 1) return false;
  inputs = PyTuple_GET_ITEM(args, 0);
  clone = true;
  if (kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0) return true;
  if (PyDict_GET_SIZE(kwargs) != 1) return false;
  PyObject* value = PyDict_GetItemWithError(kwargs, clone_outputs_key);  // a str key: no error
  if (value != Py_True && value != Py_False)
    return false;  // absent, or not a bool (nanobind's rule)
  clone = value == Py_True;
  return true;
}

template <typename Self, nb::list (*Call)(Self&, nb::handle, bool)>
PyObject* tp_call(PyObject* self, PyObject* args, PyObject* kwargs) noexcept {
  PyObject* inputs = nullptr;
  bool clone = true;
  if (!nb::inst_ready(self) || !plain_call_args(args, kwargs, inputs, clone)) {
    PyObject* bound = PyObject_GetAttrString(self, "__call__");
    if (bound == nullptr) return nullptr;
    PyObject* result = PyObject_Call(bound, args, kwargs);
    Py_DECREF(bound);
    return result;
  }
  try {
    return Call(*nb::inst_ptr<Self>(self), inputs, clone).release().ptr();
  } catch (...) {
    set_error_from_current_exception();
    return nullptr;
  }
}

// Installed after the class's defs: defining __call__ set tp_call to
// CPython's generic slot_tp_call.
void set_tp_call(nb::handle type, ternaryfunc call) {
  auto* t = reinterpret_cast<PyTypeObject*>(type.ptr());
  t->tp_call = call;
  PyType_Modified(t);
}

}  // namespace

nb::object load_method(const PyProgram& program, const std::string& name, const std::string& device,
                       bool cuda_graphs, bool allow_tf32) {
  return nb::cast(make_method(program.program, name, device, cuda_graphs, allow_tf32));
}

void init_method(nb::module_& m) {
  clone_outputs_key = PyUnicode_InternFromString("clone_outputs");  // kept for the process
  auto method_class = nb::class_<PyMethod>(m, "Method", "A loaded method of a program.");
  method_class
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
        return "Method(name='" + printable(self.runner->method().name()) + "', device='" +
               self.device + "')";
      });

  set_tp_call(method_class, &tp_call<PyMethod, &call_method>);

  auto module_class = nb::class_<PyModule>(m, "Module", "A program with lazily loaded methods.");
  module_class
      .def(
          "__init__",
          [](PyModule* self, nb::handle src, nb::handle data, const std::string& device,
             bool cuda_graphs, bool allow_tf32) {
            auto program_bytes = read_source(src, "Module(src)");
            auto data_bytes = data.is_none() ? nullptr : read_source(data, "Module(data=)");
            std::string canonical;
            method_options(device, cuda_graphs, allow_tf32, canonical);
            std::shared_ptr<const Program> program;
            {
              nb::gil_scoped_release release;
              program = Program::load(std::move(program_bytes), std::move(data_bytes));
            }
            new (self) PyModule{std::move(program), canonical, cuda_graphs, allow_tf32, {}};
          },
          "src"_a, nb::kw_only(), "data"_a = nb::none(), "device"_a = "cpu", "cuda_graphs"_a = true,
          "allow_tf32"_a = false)
      .def_prop_ro("method_names", [](PyModule& self) { return self.program->method_names(); })
      .def(
          "method_meta",
          [](PyModule& self, const std::string& name) { return self.program->method_meta(name); },
          "name"_a)
      .def("forward", &call_module, "inputs"_a, nb::kw_only(), "clone_outputs"_a = true)
      .def("__call__", &call_module, "inputs"_a, nb::kw_only(), "clone_outputs"_a = true)
      .def("run_method", &PyModule::run, "name"_a, "inputs"_a, nb::kw_only(),
           "clone_outputs"_a = true)
      .def("plan_execute", &PyModule::plan_execute, "name"_a = "forward", nb::kw_only(),
           "clone_outputs"_a = true)
      .def("__repr__", [](PyModule& self) {
        std::string names;
        for (const auto& n : self.program->method_names()) {
          names += (names.empty() ? "'" : ", '") + printable(n) + "'";
        }
        return "Module(methods=[" + names + "], device='" + self.device + "')";
      });
  set_tp_call(module_class, &tp_call<PyModule, &call_module>);
}

}  // namespace pterun::python
