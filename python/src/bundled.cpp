// Bundled programs (.bpte): the program inside, its test cases, and
// verification with ExecuTorch's tolerances. The logic lives in
// pterun/devtools/bundled_program.{h,cpp}.

#include "python/src/bundled.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "pterun/devtools/bundled_program.h"
#include "python/src/convert.h"
#include "python/src/program.h"
#include "python/src/tensor.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pterun::python {
namespace {

struct PyBundled {
  std::shared_ptr<const BundledProgram> bundle;
};

struct PyTestCase {
  std::shared_ptr<const BundledProgram> bundle;
  const format::BundledCase* c = nullptr;
  std::string method;
  size_t index = 0;
};

/// A bundled value as Python sees it: a pterun.Tensor (a copy, so that no
/// one writes into the file), or a number.
nb::object bundled_to_python(const format::BundledValue& v) {
  switch (v.kind) {
    case ValueKind::Int: return nb::int_(v.int_value);
    case ValueKind::Double: return nb::float_(v.double_value);
    case ValueKind::Bool: return nb::bool_(v.bool_value);
    case ValueKind::Tensor: break;
    default: return nb::none();
  }
  auto storage = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(v.data.size(), 1)]);
  if (!v.data.empty()) std::memcpy(storage.get(), v.data.data(), v.data.size());
  TensorResult t;
  t.data = storage.get();
  t.storage = std::move(storage);
  t.dtype = v.dtype;
  t.sizes = ResultDims(std::span<const int64_t>(v.sizes));
  t.strides = ResultDims(std::span<const int64_t>(v.strides));
  return wrap_tensor(std::move(t));
}

nb::list bundled_list(const std::vector<format::BundledValue>& values) {
  nb::list out;
  for (const auto& v : values) out.append(bundled_to_python(v));
  return out;
}

MethodOptions options_for(const std::string& device) {
  MethodOptions o;
  const int index = resolve_device(device);
  if (index >= 0) {
    o.device = Device::CUDA;
    o.device_index = index;
  }
  return o;
}

/// Runs the cases of `names` (every suite when empty) on one Method each.
std::vector<CaseResult> verify(const PyBundled& self, const std::vector<std::string>& names,
                               double rtol, double atol, const std::string& device) {
  const MethodOptions options = options_for(device);
  std::vector<CaseResult> out;
  nb::gil_scoped_release release;
  for (const auto& suite : self.bundle->suites()) {
    if (!names.empty() && std::ranges::find(names, suite.method_name) == names.end()) continue;
    auto method = Method::load(self.bundle->program(), suite.method_name, options);
    for (size_t k = 0; k < suite.cases.size(); ++k) {
      out.push_back(run_case(*method, suite.cases[k], k, rtol, atol));
    }
  }
  return out;
}

std::string result_repr(const CaseResult& r) {
  std::string status = !r.compared ? "ran" : r.passed ? "passed" : "failed";
  std::string out = str_cat("CaseResult(method='", r.method, "', index=", r.index, ", ", status);
  if (r.compared) out += str_cat(", max_abs_error=", r.max_abs_error);
  if (!r.message.empty()) out += str_cat(", message='", r.message, "'");
  return out + ")";
}

}  // namespace

void init_bundled(nb::module_& m) {
  nb::class_<CaseResult>(m, "CaseResult", "What running one bundled test case gave.")
      .def_ro("method", &CaseResult::method)
      .def_ro("index", &CaseResult::index)
      .def_ro("compared", &CaseResult::compared,
              "False when the case has no expected outputs (it only ran).")
      .def_ro("passed", &CaseResult::passed, "Every output matched (True for a case that ran).")
      .def_ro("message", &CaseResult::message, "The first difference; empty when passed.")
      .def_ro("max_abs_error", &CaseResult::max_abs_error)
      .def_ro("max_rel_error", &CaseResult::max_rel_error,
              "Largest |a - b| / max(1e-8, |b|), b expected.")
      .def("__bool__", [](const CaseResult& r) { return r.passed; })
      .def("__repr__", &result_repr);

  nb::class_<PyTestCase>(m, "BundledTestCase", "One test case of a bundled program.")
      .def_prop_ro("method_name", [](const PyTestCase& t) { return t.method; })
      .def_prop_ro("index", [](const PyTestCase& t) { return t.index; })
      .def_prop_ro(
          "inputs", [](const PyTestCase& t) { return bundled_list(t.c->inputs); },
          "The inputs: pterun.Tensor copies and numbers.")
      .def_prop_ro(
          "expected_outputs",
          [](const PyTestCase& t) { return bundled_list(t.c->expected_outputs); },
          "The expected outputs (empty when the case has none).")
      .def("__repr__", [](const PyTestCase& t) {
        return str_cat("BundledTestCase(method='", t.method, "', index=", t.index,
                       ", inputs=", t.c->inputs.size(),
                       ", expected_outputs=", t.c->expected_outputs.size(), ")");
      });

  nb::class_<PyBundled>(m, "BundledProgram",
                        "A bundled program (.bpte): a program and test cases for its methods.")
      .def_prop_ro(
          "program", [](const PyBundled& b) { return PyProgram{b.bundle->program()}; },
          "The program inside (a pterun.Program).")
      .def_prop_ro(
          "method_names",
          [](const PyBundled& b) {
            std::vector<std::string> names;
            for (const auto& s : b.bundle->suites()) names.push_back(s.method_name);
            return names;
          },
          "Methods that have test cases, in file order.")
      .def(
          "test_cases",
          [](const PyBundled& b, const std::string& name) {
            nb::list out;
            const auto& cases = b.bundle->cases(name);
            for (size_t k = 0; k < cases.size(); ++k) {
              out.append(nb::cast(PyTestCase{b.bundle, &cases[k], name, k}));
            }
            return out;
          },
          "method_name"_a, "The test cases of one method.")
      .def("verify", &verify, nb::kw_only(), "methods"_a = std::vector<std::string>{},
           "rtol"_a = kBundledRtol, "atol"_a = kBundledAtol, "device"_a = "cpu",
           "Runs every test case (of `methods`, or all) and compares the outputs with the "
           "expected ones: |a - b| <= atol + rtol * |b| for float32/float64/float16/bfloat16, "
           "bit for bit for every other dtype. Returns one CaseResult per case.")
      .def(
          "verify_result_with_bundled_expected_output",
          [](const PyBundled& b, const std::string& name, size_t index, double rtol, double atol) {
            const format::BundledCase& c = b.bundle->test_case(name, index);
            std::vector<OutputValue> outputs;
            CaseResult r;
            {
              nb::gil_scoped_release release;
              auto runner =
                  MethodRunner::create(Method::load(b.bundle->program(), name, MethodOptions{}));
              outputs = runner->call(bundled_inputs(c), /*clone=*/true);
              r = compare_outputs(runner->method(), c, rtol, atol);
            }
            if (!r.passed) {
              throw std::runtime_error(str_cat("bundled program: method '", name, "' case ", index,
                                               " failed verification: ", r.message));
            }
            return to_python(std::move(outputs));
          },
          "method_name"_a, "testset_idx"_a, "rtol"_a = kBundledRtol, "atol"_a = kBundledAtol,
          "ExecuTorch's name: runs one case on the CPU and returns its outputs; raises "
          "RuntimeError when an output differs from the expected one.")
      .def("__repr__", [](const PyBundled& b) {
        std::string suites;
        for (const auto& s : b.bundle->suites()) {
          suites += str_cat(suites.empty() ? "" : ", ", "'", s.method_name, "': ", s.cases.size());
        }
        return "BundledProgram(test_cases={" + suites + "})";
      });

  m.def(
      "load_bundled_program",
      [](nb::handle src, nb::handle data) {
        auto file = read_source(src, "load_bundled_program(src)");
        auto data_buffer =
            data.is_none() ? nullptr : read_source(data, "load_bundled_program(data=)");
        nb::gil_scoped_release release;
        return PyBundled{BundledProgram::load(std::move(file), std::move(data_buffer))};
      },
      "src"_a, nb::kw_only(), "data"_a = nb::none(),
      "Loads a bundled program (.bpte) from a path or a bytes-like object, with an optional "
      ".ptd data file for its program.");
}

}  // namespace pterun::python
