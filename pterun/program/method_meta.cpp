#include "pterun/program/method_meta.h"

#include <algorithm>

#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/program/program.h"

namespace pterun {

TensorInfo TensorInfo::from(const format::TensorDesc& t) {
  return {t.sizes, t.dtype, t.dim_order, t.is_memory_planned, t.nbytes, t.dynamism, t.name};
}

MethodMeta::MethodMeta(std::shared_ptr<const Program> program, const format::MethodDesc& method)
    : program_(std::move(program)), method_(&method) {
  for (size_t i = 0; i < method.values.size(); ++i) {
    const auto& v = method.values[i];
    if (v.kind == ValueKind::Tensor && !v.tensor->name.empty()) attributes_.push_back(i);
  }
  for (const auto& d : method.delegates) {
    if (std::find(backends_.begin(), backends_.end(), d.id) == backends_.end()) {
      backends_.push_back(d.id);
    }
  }
}

const format::ValueDesc& MethodMeta::io_value(const std::vector<int32_t>& list, size_t i,
                                              const char* what) const {
  PTERUN_CHECK(i < list.size(), ErrorCode::IndexOutOfRange, "method '", printable(name()),
               "': ", what, " index ", i, " is out of range (the method has ", list.size(), " ",
               what, "s)");
  return method_->values[list[i]];
}

TensorInfo MethodMeta::io_tensor(const std::vector<int32_t>& list, size_t i,
                                 const char* what) const {
  const auto& v = io_value(list, i, what);
  PTERUN_CHECK(v.kind == ValueKind::Tensor, ErrorCode::InvalidArgument, "method '",
               printable(name()), "': ", what, " ", i, " is a ", format::value_kind_name(v.kind),
               ", not a Tensor");
  return TensorInfo::from(*v.tensor);
}

ValueKind MethodMeta::input_tag(size_t i) const {
  return io_value(method_->inputs, i, "input").kind;
}

ValueKind MethodMeta::output_tag(size_t i) const {
  return io_value(method_->outputs, i, "output").kind;
}

TensorInfo MethodMeta::input_tensor_meta(size_t i) const {
  return io_tensor(method_->inputs, i, "input");
}

TensorInfo MethodMeta::output_tensor_meta(size_t i) const {
  return io_tensor(method_->outputs, i, "output");
}

TensorInfo MethodMeta::attribute_tensor_meta(size_t i) const {
  PTERUN_CHECK(i < attributes_.size(), ErrorCode::IndexOutOfRange, "method '", printable(name()),
               "': attribute index ", i, " is out of range (the method has ", attributes_.size(),
               " attributes)");
  return TensorInfo::from(*method_->values[attributes_[i]].tensor);
}

}  // namespace pterun
