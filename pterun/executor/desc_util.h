#pragma once

// Facts about a method's instructions and tensors that the load-time
// finders (rewrite.h, layout.h) share: the straight-line order of its
// instructions, where each value is mentioned, and planned memory.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pterun/format/program_desc.h"

namespace pterun::desc {

/// Where an instruction sits: its chain and index there.
struct Position {
  size_t chain;
  size_t index;
  const format::InstructionDesc* instr;
};

/// Every instruction in chain order; empty when the method has jumps or
/// moves (the finders then leave it alone).
std::vector<Position> straight_line(const format::MethodDesc& d);

/// For each value, the positions (in `order`) of the kernel and delegate
/// calls that name it (list items included), each once, in order.
std::vector<std::vector<size_t>> mentions(const format::MethodDesc& d,
                                          const std::vector<Position>& order);

/// True when `instr` calls the kernel `name` with `args` arguments.
bool is_call(const format::MethodDesc& d, const format::InstructionDesc& instr, const char* name,
             size_t args);

/// True when `instr` writes every tensor it names, not only its result:
/// an operator that is no out variant (copy_, index_put_ ...), or one of
/// the out variants that update a KV cache in place (llama::update_cache
/// and the like).
bool writes_operands(const format::MethodDesc& d, const format::InstructionDesc& instr);

/// Value `v`'s tensor, or null when it is not a tensor.
const format::TensorDesc* tensor_of(const format::MethodDesc& d, int32_t v);

/// True when the tensor's dim order is 0, 1, ..., rank - 1.
bool default_order(const format::TensorDesc& t);

/// True when the tensor lives in planned memory (of the method or shared).
bool planned(const format::TensorDesc& t);

/// True when two planned tensors' bytes overlap.
bool overlaps(const format::TensorDesc& a, const format::TensorDesc& b);

/// True when two planned tensors hold exactly the same bytes as the same
/// elements: one buffer, offset and size, one dtype, both in default dim
/// order (a reshape the exporter resolved by planning).
bool same_bytes(const format::TensorDesc& a, const format::TensorDesc& b);

/// True when some other tensor value's planned bytes overlap those of `v`.
bool overlapped(const format::MethodDesc& d, int32_t v);

}  // namespace pterun::desc
