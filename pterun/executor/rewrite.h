#pragma once

#include <cstddef>
#include <vector>

#include "pterun/format/program_desc.h"

namespace pterun {

/// Instruction `index` of chain `chain` may run the internal kernel named
/// `kernel` (kernels/internal_ops.h) with its own arguments: same results
/// for everything the method reads afterwards, less work.
struct KernelRewrite {
  size_t chain = 0;
  size_t index = 0;
  const char* kernel = nullptr;
};

/// The rewrites of a method, found from its instructions alone:
/// max_pool2d_with_indices.out whose indices no other instruction reads
/// computes the values only. Values marked in `keep` (inputs, outputs,
/// state, values re-pointed at run time) always get their full results.
std::vector<KernelRewrite> find_kernel_rewrites(const format::MethodDesc& d,
                                                const std::vector<bool>& keep);

}  // namespace pterun
