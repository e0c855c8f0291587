#include "python/src/program.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/program/program.h"
#include "python/src/convert.h"
#include "python/src/method.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pterun::python {
namespace {

using Buffer = std::shared_ptr<const format::DataBuffer>;

}  // namespace

/// Bytes of a program or data file from a path (memory-mapped) or from a
/// bytes-like object. Read-only buffers are used in place and kept alive;
/// writable ones are copied, so later writes cannot change a verified file.
Buffer read_source(nb::handle src, const char* what) {
  if (PyUnicode_Check(src.ptr()) || PyObject_HasAttrString(src.ptr(), "__fspath__")) {
    nb::object path = nb::steal(PyOS_FSPath(src.ptr()));
    if (!path.is_valid()) throw nb::python_error();
    if (!PyUnicode_Check(path.ptr())) {
      throw nb::type_error(
          (std::string(what) + ": a bytes path is not supported; pass str or os.PathLike").c_str());
    }
    return format::DataBuffer::map_file(nb::cast<std::string>(path));
  }
  if (!PyObject_CheckBuffer(src.ptr()) && nb::hasattr(src, "read")) {
    // A file-like object (io.BytesIO, an open binary file): its remaining
    // bytes, as ExecuTorch's load_program reads them.
    nb::object bytes = src.attr("read")();
    if (!PyBytes_Check(bytes.ptr()) && !PyByteArray_Check(bytes.ptr())) {
      throw nb::type_error((std::string(what) + ": read() returned " +
                            nb::cast<std::string>(nb::str(bytes.type().attr("__name__"))) +
                            ", not bytes (open the file in binary mode)")
                               .c_str());
    }
    return read_source(bytes, what);
  }
  if (!PyObject_CheckBuffer(src.ptr())) {
    throw nb::type_error((std::string(what) +
                          ": expected a path (str, os.PathLike), a bytes-like object or a "
                          "binary file-like object, got " +
                          nb::cast<std::string>(nb::str(src.type().attr("__name__"))))
                             .c_str());
  }
  auto held = std::make_shared<HeldBuffer>();
  if (PyObject_GetBuffer(src.ptr(), &held->view, PyBUF_C_CONTIGUOUS) != 0) {
    throw nb::python_error();
  }
  std::span<const uint8_t> bytes(static_cast<const uint8_t*>(held->view.buf),
                                 static_cast<size_t>(held->view.len));
  if (!held->view.readonly) {
    nb::gil_scoped_release release;
    return format::DataBuffer::copy_of(bytes);
  }
  return format::DataBuffer::borrow(bytes, held);
}

namespace {

nb::tuple to_tuple(const auto& items) {
  nb::list out;
  for (const auto& x : items) out.append(x);
  return nb::tuple(out);
}

std::string tensor_info_repr(const TensorInfo& t) {
  std::string sizes;
  for (size_t i = 0; i < t.sizes.size(); ++i) sizes += (i ? ", " : "") + std::to_string(t.sizes[i]);
  if (t.sizes.size() == 1) sizes += ",";
  std::string order;
  for (size_t i = 0; i < t.dim_order.size(); ++i) {
    order += (i ? ", " : "") + std::to_string(t.dim_order[i]);
  }
  if (t.dim_order.size() == 1) order += ",";
  std::string out = str_cat(
      "TensorInfo(sizes=(", sizes, "), dtype=", dtype_name(t.dtype), ", dim_order=(", order,
      "), shape_dynamism='", shape_dynamism_name(t.dynamism),
      "', is_memory_planned=", t.is_memory_planned ? "True" : "False", ", nbytes=", t.nbytes);
  if (!t.name.empty()) out += ", name='" + printable(t.name) + "'";
  return out + ")";
}

std::string io_summary(const MethodMeta& m, bool inputs) {
  size_t n = inputs ? m.num_inputs() : m.num_outputs();
  std::string out = "[";
  for (size_t i = 0; i < n; ++i) {
    ValueKind kind = inputs ? m.input_tag(i) : m.output_tag(i);
    out += i ? ", " : "";
    if (kind != ValueKind::Tensor) {
      out += format::value_kind_name(kind);
      continue;
    }
    TensorInfo t = inputs ? m.input_tensor_meta(i) : m.output_tensor_meta(i);
    out += std::string(dtype_name(t.dtype)) + "[";
    for (size_t d = 0; d < t.sizes.size(); ++d) out += (d ? ", " : "") + std::to_string(t.sizes[d]);
    out += "]";
  }
  return out + "]";
}

void bind_dtype(nb::module_& m) {
  nb::enum_<DType> e(m, "dtype", nb::is_arithmetic(),
                     "Element types, numbered as ExecuTorch's ScalarType.");
  for (int n = 0; n < 64; ++n) {
    if (auto d = dtype_from_number(n)) e.value(std::string(dtype_name(*d)).c_str(), *d);
  }
}

void bind_tensor_info(nb::module_& m) {
  nb::class_<TensorInfo>(m, "TensorInfo", "What a program declares about one tensor.")
      .def_prop_ro(
          "sizes", [](const TensorInfo& t) { return to_tuple(t.sizes); },
          "The shape; for dynamic tensors, the upper bound.")
      .def_prop_ro("dtype", [](const TensorInfo& t) { return t.dtype; })
      .def_prop_ro("dtype_name",
                   [](const TensorInfo& t) { return std::string(dtype_name(t.dtype)); })
      .def_prop_ro(
          "dim_order", [](const TensorInfo& t) { return to_tuple(t.dim_order); },
          "Dimensions from outermost to innermost in memory.")
      .def_prop_ro("is_memory_planned", [](const TensorInfo& t) { return t.is_memory_planned; })
      .def_prop_ro("nbytes", [](const TensorInfo& t) { return t.nbytes; })
      .def_prop_ro(
          "shape_dynamism",
          [](const TensorInfo& t) { return std::string(shape_dynamism_name(t.dynamism)); },
          "'static', 'dynamic_bound' or 'dynamic_unbound'.")
      .def_prop_ro(
          "name",
          [](const TensorInfo& t) -> nb::object {
            if (t.name.empty()) return nb::none();
            return nb::str(t.name.c_str());
          },
          "The fully qualified name, or None.")
      .def("__repr__", &tensor_info_repr);
}

void bind_method_meta(nb::module_& m) {
  auto tag = [](ValueKind k) { return std::string(format::value_kind_name(k)); };
  nb::class_<MethodMeta>(m, "MethodMeta", "Metadata of one method, read without loading it.")
      .def_prop_ro("name", &MethodMeta::name)
      .def_prop_ro("num_inputs", &MethodMeta::num_inputs)
      .def_prop_ro("num_outputs", &MethodMeta::num_outputs)
      .def_prop_ro("num_attributes", &MethodMeta::num_attributes)
      .def_prop_ro("memory_planned_buffer_sizes",
                   [](const MethodMeta& mm) { return to_tuple(mm.memory_planned_buffer_sizes()); })
      .def_prop_ro(
          "backends", [](const MethodMeta& mm) { return to_tuple(mm.backends()); },
          "Delegate backend ids the method uses.")
      .def(
          "input_tag", [tag](const MethodMeta& mm, size_t i) { return tag(mm.input_tag(i)); },
          "index"_a, "'Tensor', 'Int', 'Double', 'Bool', 'String' or 'None'.")
      .def(
          "output_tag", [tag](const MethodMeta& mm, size_t i) { return tag(mm.output_tag(i)); },
          "index"_a)
      .def("input_tensor_meta", &MethodMeta::input_tensor_meta, "index"_a)
      .def("output_tensor_meta", &MethodMeta::output_tensor_meta, "index"_a)
      .def("attribute_tensor_meta", &MethodMeta::attribute_tensor_meta, "index"_a)
      .def("__repr__", [](const MethodMeta& mm) {
        std::string backends;
        for (const auto& b : mm.backends()) {
          backends += (backends.empty() ? "'" : ", '") + printable(b) + "'";
        }
        return str_cat("MethodMeta(name='", printable(mm.name()),
                       "', inputs=", io_summary(mm, true), ", outputs=", io_summary(mm, false),
                       ", backends=(", backends, mm.backends().size() == 1 ? ",)" : ")", ")");
      });
}

void bind_program(nb::module_& m) {
  nb::class_<PyProgram>(m, "Program", "A loaded, verified ExecuTorch program.")
      .def_prop_ro(
          "method_names", [](const PyProgram& p) { return p.program->method_names(); },
          "Method names in file order.")
      .def(
          "method_meta",
          [](const PyProgram& p, const std::string& name) { return p.program->method_meta(name); },
          "name"_a, "Metadata of method `name` (ValueError when there is none).")
      .def("load_method", &load_method, "name"_a, nb::kw_only(), "device"_a = "cpu",
           "cuda_graphs"_a = true, "allow_tf32"_a = false,
           "Loads method `name` on `device` ('cpu', 'cuda', 'cuda:N'). On a GPU, a method "
           "with static shapes and no control flow is captured as a CUDA graph and replayed "
           "(cuda_graphs=False runs its kernels one by one); allow_tf32=True lets float32 "
           "matrix products and convolutions round their inputs to TF32 on the tensor cores "
           "(faster, about 3 significant digits; off by default, as in torch).")
      .def("__repr__", [](const PyProgram& p) {
        std::string names;
        for (const auto& n : p.program->method_names()) {
          names += (names.empty() ? "'" : ", '") + printable(n) + "'";
        }
        return "Program(methods=[" + names + "])";
      });

  m.def(
      "load_program",
      [](nb::handle src, nb::handle data) {
        Buffer program = read_source(src, "load_program(src)");
        Buffer data_buffer = data.is_none() ? nullptr : read_source(data, "load_program(data=)");
        nb::gil_scoped_release release;
        return PyProgram{Program::load(std::move(program), std::move(data_buffer))};
      },
      "src"_a, nb::kw_only(), "data"_a = nb::none(),
      "Loads a .pte program from a path (memory-mapped), a bytes-like object or a binary "
      "file-like object, with an optional .ptd data file (the same kinds). A bundled program "
      "(.bpte) loads the program inside it. Raises FileNotFoundError for a missing file and "
      "ProgramError for a damaged one.");
}

}  // namespace

void init_program(nb::module_& m) {
  bind_dtype(m);
  bind_tensor_info(m);
  bind_method_meta(m);
  bind_program(m);
}

}  // namespace pterun::python
