#pragma once

// Fused elementwise programs as generated kernels: the program's steps
// written out as straight-line CUDA C++ over the float_fns.cuh functions,
// compiled by NVRTC for the GPU at hand the first time a program of that
// shape runs, and kept for the process. A generated kernel reads each
// operand the way it is laid out (vector loads where dense, one offset
// where broadcast from one element, a strided walk otherwise), so it
// moves the bytes of a copy and no more; the program interpreter
// (fused.cu) runs what it cannot.
//
// PTERUN_FUSED_JIT=0 turns generation off; PTERUN_FUSED_JIT=require makes
// a program that cannot be generated (NVRTC missing, a compile failure)
// an error instead of a fall back to the interpreter (for tests).

#include <cstdint>
#include <span>
#include <string>

#include "pterun/backend/cuda/ops/fused_program.h"
#include "pterun/core/tensor.h"
#include "pterun/kernels/kernel.h"

namespace pterun::kernels::cuda_ops {

/// The walk over out: `sizes` (outermost first, merged as make_indexer
/// merges them) and each operand's element strides over it, out first.
struct FusedWalk {
  std::span<const int64_t> sizes;
  std::span<const int64_t* const> strides;  // 1 + inputs entries of sizes.size() each
};

/// Launches `program` as a generated kernel on the method's stream; false
/// (nothing launched) where no generated kernel applies: generation off,
/// out not dense, a walk of more than kJitMaxRank dims, or NVRTC failing
/// when not required.
bool launch_generated(const KernelContext& ctx, const DeviceProgram& program,
                      std::span<const Tensor* const> inputs, Tensor& out, const FusedWalk& walk,
                      const char* op);

/// The source of the kernel for a program over inputs of the given dtypes
/// and kinds of access, for tests: `access` per input is 'd' (dense), 's'
/// (one element) or 'w' (strided walk of `rank` dims).
std::string generated_source(const DeviceProgram& program, std::span<const DType> inputs,
                             std::span<const char> access, DType out, int rank);

}  // namespace pterun::kernels::cuda_ops
