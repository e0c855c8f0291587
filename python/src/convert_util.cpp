#include "python/src/convert_util.h"

namespace pterun::python::convert_detail {

[[noreturn]] void raise(PyObject* type, const InputSource& source, const std::string& msg) {
  std::string text = source.prefix() + msg;
  PyErr_SetString(type, text.c_str());
  throw nb::python_error();
}

std::string message_of(const nb::python_error& e) {
  try {
    return nb::cast<std::string>(nb::str(e.value()));
  } catch (const std::exception&) {
    PyErr_Clear();
    return "(no message)";
  }
}

[[noreturn]] void reraise(nb::python_error& e, const InputSource& source) {
  nb::object type = nb::borrow(e.type());
  raise(type.ptr(), source, message_of(e));
}

std::shared_ptr<void> hold_object(nb::handle obj, bool kept, InputBatch& batch) {
  if (!kept) {
    batch.hold(obj);
    return nullptr;
  }
  auto object = std::make_shared<GilHeld<nb::object>>();
  object->value = nb::borrow(obj);
  return object;
}

void place_on(InputArg& a, int index) {
  if (index < 0) return;
  a.device = Device::CUDA;
  a.device_index = index;
}

}  // namespace pterun::python::convert_detail
