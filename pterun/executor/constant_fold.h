#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "pterun/core/device.h"
#include "pterun/format/program_desc.h"

namespace pterun {

/// Instructions whose results depend on constants alone, so that one run
/// at load gives every call's result: a pure kernel (data movement,
/// creation, comparisons, logic, simple arithmetic) whose tensor inputs
/// are constants or results of earlier such instructions, whose other
/// arguments nothing writes at run time, and whose static-shape result no
/// other instruction writes. Without this a linear layer transposes its
/// constant weight, and attention rebuilds its causal mask, on every call.
/// Values marked in `keep` (inputs, outputs, state, re-pointed values) are
/// never folded. Which kernels are pure is the registry's `foldable` flag
/// for `device`. Returned as (chain, instruction), in run order.
std::vector<std::pair<size_t, size_t>> find_constant_instructions(const format::MethodDesc& d,
                                                                  const std::vector<bool>& keep,
                                                                  Device device = Device::CPU);

}  // namespace pterun
