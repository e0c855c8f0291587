#pragma once

// Bundled programs (.bpte, ExecuTorch's devtools): a whole .pte file plus,
// per method, test cases of inputs and expected outputs
// (docs/executorch-runtime.md, "Bundled programs"). Verified here like a
// program.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pterun/core/dtype.h"
#include "pterun/core/value_kind.h"
#include "pterun/format/data_buffer.h"

namespace pterun::format {

/// One input or expected output: a tensor (its bytes in its own dim order)
/// or an Int, Bool or Double.
struct BundledValue {
  ValueKind kind = ValueKind::None;
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> dim_order;
  std::vector<int64_t> strides;   // in elements, from sizes and dim_order
  std::span<const uint8_t> data;  // numel * element size bytes, in the file
  int64_t int_value = 0;
  double double_value = 0;
  bool bool_value = false;
};

struct BundledCase {
  std::vector<BundledValue> inputs;
  std::vector<BundledValue> expected_outputs;  // empty: nothing to compare
};

struct BundledSuite {
  std::string method_name;
  std::vector<BundledCase> cases;
};

struct BundledDesc {
  uint32_t version = 0;
  std::span<const uint8_t> program;  // the .pte bytes, inside the file
  std::vector<BundledSuite> suites;
};

/// The schema version this reader understands (ExecuTorch's
/// BUNDLED_PROGRAM_SCHEMA_VERSION).
constexpr uint32_t kBundledVersion = 2;

/// True when `file` carries the bundled-program identifier "BP08".
bool is_bundled_program(std::span<const uint8_t> file);

/// Verifies the whole flatbuffer and every value. Error InvalidProgram for a
/// damaged file, another version, or a program that is missing.
BundledDesc read_bundled_program(const DataBuffer& buffer);

}  // namespace pterun::format
