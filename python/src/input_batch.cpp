#include "python/src/input_batch.h"

#include <new>
#include <utility>

namespace nb = nanobind;

namespace pterun::python {

InputBatch::~InputBatch() {
  for (size_t i = 0; i < count_; ++i) args_[i].~InputArg();
  for (Held* h = held_; h != nullptr; h = h->next) {
    PyBuffer_Release(&h->view);  // nothing when never filled
    Py_XDECREF(h->object);
  }
}

void* InputBatch::allocate(size_t bytes, size_t align) {
  const size_t start = (used_ + align - 1) & ~(align - 1);  // align: a power of two
  if (start + bytes <= sizeof inline_) {
    used_ = start + bytes;
    return inline_ + start;
  }
  return overflow_.allocate(bytes, align);
}

void InputBatch::reserve(size_t n) {
  if (n <= capacity_) return;
  auto* grown = static_cast<InputArg*>(allocate(n * sizeof(InputArg), alignof(InputArg)));
  for (size_t i = 0; i < count_; ++i) {
    new (grown + i) InputArg(std::move(args_[i]));
    args_[i].~InputArg();
  }
  args_ = grown;
  capacity_ = n;
}

InputArg& InputBatch::add(InputArg&& a) {
  if (count_ == capacity_) reserve(capacity_ == 0 ? 4 : 2 * capacity_);
  return *new (args_ + count_++) InputArg(std::move(a));
}

std::span<int64_t> InputBatch::numbers(size_t n) {
  if (n == 0) return {};
  return {static_cast<int64_t*>(allocate(n * sizeof(int64_t), alignof(int64_t))), n};
}

InputBatch::Held& InputBatch::add_held() {
  Held* h = new (allocate(sizeof(Held), alignof(Held))) Held{};
  h->next = held_;
  held_ = h;
  return *h;
}

Py_buffer& InputBatch::buffer() {
  return add_held().view;
}

void InputBatch::hold(nb::handle obj) {
  add_held().object = obj.inc_ref().ptr();
}

}  // namespace pterun::python
