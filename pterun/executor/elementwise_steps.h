#pragma once

// One instruction of a method as a step of a fused elementwise program
// (ops/fused.h): what the elementwise fusion's finder
// (rewrite_elementwise.cpp) grows its trees from. Internal to executor/.

#include <cstdint>
#include <optional>
#include <vector>

#include "pterun/executor/rewrite.h"
#include "pterun/format/program_desc.h"
#include "pterun/ops/fused.h"

namespace pterun::fusion {

/// How a layout instruction (a copy that only moves elements) re-indexes
/// its operand: not at all (clone, an expand to its own shape), a
/// permutation of its dims (`dims`), a reshape of a row-major operand to its
/// out's shape, or a broadcast to its out's shape (expand).
enum class Layout : uint8_t { None, Same, Permute, Reshape, Expand };

/// One instruction as a step: its operation and the values it reads and
/// writes (b -1 when it reads one tensor). A layout instruction reads its
/// operand through `view` (set while the trees grow).
struct Node {
  ops::FusedStep step;
  int32_t a = -1, b = -1;
  int32_t out = -1;
  Layout layout = Layout::None;
  std::vector<int64_t> dims;
  std::optional<ElementwiseFusion::Input> view;
};

/// Instruction `instr` as a step: the elementwise operators and float
/// copies rewrite.h lists (and, with `layouts`, the layout copies), every
/// tensor float32, float16 or bfloat16; nothing for any other. The step's
/// registers and rounding dtype are left for the finder to fill.
std::optional<Node> translate(const format::MethodDesc& d, const format::InstructionDesc& instr,
                              bool layouts);

}  // namespace pterun::fusion
