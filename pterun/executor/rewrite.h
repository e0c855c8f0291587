#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pterun/format/program_desc.h"

namespace pterun {

/// How many instructions mention each value (arguments, items of list
/// arguments, moves, jump conditions), each instruction counted once: a
/// value one kernel writes and one other reads counts 2.
std::vector<int> count_uses(const format::MethodDesc& d);

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

/// Two instructions of one chain that may run as one kernel: `first` runs
/// nothing and `second` runs `kernel` (kernels/internal_ops.h) with `args`
/// (value indices), which gives what `second` gave; `dropped` is the value
/// `first` wrote, which nothing reads any more.
struct KernelFusion {
  size_t chain = 0;
  size_t first = 0;
  size_t second = 0;
  const char* kernel = nullptr;
  std::array<int32_t, 5> args{};
  int32_t dropped = 0;
};

/// mul.out(x, m) -> t followed by add.out(t, a, alpha) -> out (or sub.out)
/// where only that add reads t, t is not in `keep`, x, m, t, a and out share
/// one floating dtype, and every instruction between the two is marked in
/// `idle` (it runs nothing: folded at load); none in methods with jumps or
/// moves. Gives kMulAddKernel /
/// kMulSubKernel fusions with args (x, m, a, alpha, out). The caller still
/// checks memory: that nothing reads t's bytes through a view and that out
/// does not partly overlap x, m or a.
std::vector<KernelFusion> find_mul_add_fusions(const format::MethodDesc& d,
                                               const std::vector<bool>& keep,
                                               const std::vector<std::vector<bool>>& idle);

}  // namespace pterun
