#include "python/src/errors.h"

#include <cstring>
#include <exception>
#include <utility>

#include "pterun/core/error.h"

namespace nb = nanobind;

namespace pterun::python {
namespace {

PyObject* program_error = nullptr;

// set_error_from_current_exception() rethrows the exception inside a
// nanobind function, whose dispatch translates it. Both under the GIL.
std::exception_ptr pending_exception;
PyObject* rethrow_pending = nullptr;  // borrowed: the module holds it

// Messages are UTF-8; the bytes that are not (a path given from C++, say)
// come out as \xNN escapes instead of a UnicodeDecodeError replacing the
// error. Messages quoting file content are escaped already (printable()).
void set_error(PyObject* type, const char* message) {
  PyObject* text = PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)),
                                        "backslashreplace");
  if (text == nullptr) return;  // MemoryError set
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

PyObject* python_type(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidProgram:
    case ErrorCode::InvalidExternalData: return program_error;
    case ErrorCode::FileNotFound: return PyExc_FileNotFoundError;
    case ErrorCode::AccessFailed: return PyExc_OSError;
    case ErrorCode::NotSupported:
    case ErrorCode::NotImplemented:
    case ErrorCode::OperatorMissing: return PyExc_NotImplementedError;
    case ErrorCode::InvalidArgument: return PyExc_ValueError;
    case ErrorCode::InvalidType: return PyExc_TypeError;
    case ErrorCode::IndexOutOfRange: return PyExc_IndexError;
    case ErrorCode::MemoryAllocationFailed:
    case ErrorCode::OutOfResources: return PyExc_MemoryError;
    case ErrorCode::NotFound: return PyExc_KeyError;
    case ErrorCode::InvalidState:
    case ErrorCode::Internal: return PyExc_RuntimeError;
  }
  return PyExc_RuntimeError;
}

}  // namespace

void init_errors(nb::module_& m) {
  program_error = PyErr_NewExceptionWithDoc(
      "pterun.ProgramError",
      "A file that is not an ExecuTorch program, or a damaged one (a ValueError).",
      PyExc_ValueError, nullptr);
  m.attr("ProgramError") = nb::handle(program_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      set_error(python_type(e.code()), e.what());
    }
  });
  // Private (not in the stub): a function that throws the pending exception.
  m.def("_rethrow_pending", [] { std::rethrow_exception(std::exchange(pending_exception, {})); });
  rethrow_pending = m.attr("_rethrow_pending").ptr();
}

void set_error_from_current_exception() noexcept {
  pending_exception = std::current_exception();
  Py_XDECREF(PyObject_CallNoArgs(rethrow_pending));  // null, with the error set
}

}  // namespace pterun::python
