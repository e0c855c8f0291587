#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pterun/core/dtype.h"
#include "pterun/core/value_kind.h"
#include "pterun/format/data_buffer.h"

namespace pterun::format {

// A verified, decoded .pte file. Every index in here has been checked
// against the table it points into, every byte span lies inside the file,
// and every size product fits in 64 bits. Higher layers never see
// flatbuffers.

using pterun::ShapeDynamism;
using pterun::value_kind_name;
using pterun::ValueKind;
enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };

/// Where a tensor's data comes from at method load (docs/format.md,
/// "Where a tensor's data comes from").
enum class TensorStorage : uint8_t {
  Constant,         // read-only bytes in the program
  Planned,          // planned memory, no initial value
  PlannedWithData,  // planned memory, initial bytes from a mutable-data segment
  External,         // read-only bytes of a .ptd key
  ExternalMutable,  // planned memory, initial bytes from a .ptd key
  Unplanned,        // supplied at run time (inputs, outputs, views)
};

struct TensorDesc {
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;      // exact shape, or the upper bound when dynamic
  std::vector<uint8_t> dim_order;  // a permutation of 0..rank-1
  ShapeDynamism dynamism = ShapeDynamism::Static;
  TensorStorage storage = TensorStorage::Unplanned;
  uint32_t memory_id = 0;      // planned: 1-based index into the method's buffers
  uint64_t memory_offset = 0;  // planned: byte offset inside that buffer
  uint32_t data_buffer_idx = 0;
  std::span<const uint8_t> data;  // Constant / PlannedWithData: the initial bytes
  std::string name;               // fully_qualified_name, may be empty
  DeviceType device_type = DeviceType::CPU;
  int device_index = 0;
  uint64_t numel = 0;
  uint64_t nbytes = 0;             // of `sizes`
  bool is_memory_planned = false;  // as MethodMeta reports it

  bool is_constant() const {
    return storage == TensorStorage::Constant || storage == TensorStorage::External;
  }
};

struct ValueDesc {
  ValueKind kind = ValueKind::None;
  int64_t int_value = 0;
  double double_value = 0;
  bool bool_value = false;
  std::string string_value;
  std::vector<int64_t>
      items;  // IntList / TensorList / OptionalTensorList: value indices (-1: None)
  std::vector<double> doubles;
  std::vector<uint8_t> bools;
  std::shared_ptr<const TensorDesc> tensor;  // set iff kind == Tensor
};

enum class InstructionKind : uint8_t {
  KernelCall,
  DelegateCall,
  MoveCall,
  JumpFalseCall,
  FreeCall
};

struct InstructionDesc {
  InstructionKind kind = InstructionKind::KernelCall;
  // KernelCall: op_index; DelegateCall: delegate_index; MoveCall: from;
  // JumpFalseCall: condition value; FreeCall: value.
  int32_t index = 0;
  // MoveCall: to; JumpFalseCall: destination instruction.
  int32_t target = 0;
  std::vector<int32_t> args;  // KernelCall / DelegateCall value indices
};

struct ChainDesc {
  std::vector<InstructionDesc> instructions;
};

struct OperatorDesc {
  std::string name;      // "aten::add"
  std::string overload;  // "out", may be empty
  std::string full_name() const { return overload.empty() ? name : name + "." + overload; }
};

struct CompileSpecDesc {
  std::string key;
  std::span<const uint8_t> value;
};

struct DelegateDesc {
  std::string id;  // "XnnpackBackend"
  bool inline_payload = false;
  std::span<const uint8_t> payload;
  std::vector<CompileSpecDesc> compile_specs;
};

struct BufferDevice {
  DeviceType type = DeviceType::CPU;
  int index = 0;
};

struct MethodDesc {
  std::string name;
  std::vector<ValueDesc> values;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  std::vector<ChainDesc> chains;
  std::vector<OperatorDesc> operators;
  std::vector<DelegateDesc> delegates;
  // Planned buffer sizes by memory id - 1 (entry 0 of the file is reserved).
  std::vector<uint64_t> buffer_sizes;
  std::vector<BufferDevice> buffer_devices;  // same indexing as buffer_sizes
  std::string input_spec;                    // container metadata, informational
  std::string output_spec;

  size_t num_instructions() const;
};

struct NamedDataDesc {
  std::string key;
  std::span<const uint8_t> data;
};

struct ProgramDesc {
  uint32_t version = 0;
  bool has_extended_header = false;
  bool uses_inline_constant_buffer = false;  // deprecated constant_buffer path
  uint64_t file_size = 0;
  uint64_t program_size = 0;
  uint64_t constant_bytes = 0;
  size_t num_segments = 0;
  std::vector<MethodDesc> methods;
  std::vector<NamedDataDesc> named_data;

  /// The method called `name`, or nullptr.
  const MethodDesc* find_method(std::string_view name) const;
};

/// Verifies and decodes a .pte file held by `buffer`. The spans in the
/// result point into `buffer`, which must outlive it. Error InvalidProgram
/// (or NotSupported for valid but unsupported content) otherwise.
ProgramDesc read_program(const DataBuffer& buffer);

/// A tensor layout recorded in a .ptd file.
struct ExternalLayout {
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dim_order;
  uint64_t nbytes = 0;
};

struct ExternalEntry {
  std::string key;
  std::span<const uint8_t> data;
  std::optional<ExternalLayout> layout;  // absent for opaque blobs
};

/// A verified, decoded .ptd file.
struct ExternalData {
  std::vector<ExternalEntry> entries;
  const ExternalEntry* find(std::string_view key) const;
};

/// Verifies and decodes a .ptd file. Error InvalidExternalData when bad.
ExternalData read_external_data(const DataBuffer& buffer);

}  // namespace pterun::format
