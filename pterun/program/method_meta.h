#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pterun/core/dtype.h"
#include "pterun/format/program_desc.h"

namespace pterun {

class Program;

/// What the program declares about one tensor input, output or attribute.
struct TensorInfo {
  std::vector<int64_t> sizes;  // the upper bound for dynamic tensors
  DType dtype = DType::Float32;
  std::vector<uint8_t> dim_order;
  bool is_memory_planned = false;
  uint64_t nbytes = 0;
  ShapeDynamism dynamism = ShapeDynamism::Static;
  std::string name;  // fully qualified name, empty when the program gives none

  static TensorInfo from(const format::TensorDesc& t);
};

/// Metadata of one method, read from the program without loading it. Keeps
/// its Program alive.
class MethodMeta {
 public:
  MethodMeta(std::shared_ptr<const Program> program, const format::MethodDesc& method);

  const std::string& name() const { return method_->name; }
  size_t num_inputs() const { return method_->inputs.size(); }
  size_t num_outputs() const { return method_->outputs.size(); }
  size_t num_attributes() const { return attributes_.size(); }
  size_t num_instructions() const { return method_->num_instructions(); }

  /// The kind of input / output `i`. Error IndexOutOfRange when `i` is not
  /// below the count.
  ValueKind input_tag(size_t i) const;
  ValueKind output_tag(size_t i) const;

  /// Tensor metadata of input / output / attribute `i`. Error
  /// IndexOutOfRange for a bad index, InvalidArgument when it is no tensor.
  TensorInfo input_tensor_meta(size_t i) const;
  TensorInfo output_tensor_meta(size_t i) const;
  TensorInfo attribute_tensor_meta(size_t i) const;

  const std::vector<uint64_t>& memory_planned_buffer_sizes() const { return method_->buffer_sizes; }
  /// Delegate backend ids, each once, in order of first use.
  const std::vector<std::string>& backends() const { return backends_; }

  const format::MethodDesc& desc() const { return *method_; }

 private:
  const format::ValueDesc& io_value(const std::vector<int32_t>& list, size_t i,
                                    const char* what) const;
  TensorInfo io_tensor(const std::vector<int32_t>& list, size_t i, const char* what) const;

  std::shared_ptr<const Program> program_;
  const format::MethodDesc* method_;
  std::vector<size_t> attributes_;  // value indices of named tensors
  std::vector<std::string> backends_;
};

}  // namespace pterun
