#pragma once

// The parameters of a generated fused elementwise kernel
// (backend/cuda/jit/), passed by value. The host code that fills them and
// the kernel source that NVRTC compiles both include this file, so the
// layout is defined once. It includes nothing (NVRTC has no standard
// library) and uses only built-in types.

namespace pterun::cuda {

inline constexpr int kJitMaxInputs = 8;  // ops::kFusedMaxInputs
inline constexpr int kJitMaxSteps = 24;  // ops::kFusedMaxSteps
inline constexpr int kJitMaxRank = 6;    // dims of the walk over out, once merged

struct FusedParams {
  long long n;  // out's elements
  void* out;    // dense, walked in its memory order
  const void* in[kJitMaxInputs];
  // The walk (outermost first) and each input's element strides over it;
  // read only for the inputs the kernel indexes by strides.
  long long size[kJitMaxRank];
  long long stride[kJitMaxInputs][kJitMaxRank];
  // Each step's scalars, and its integer argument: the fns::PowMode of a
  // scalar pow, 1 for a clamp with a NaN bound.
  float s0[kJitMaxSteps];
  float s1[kJitMaxSteps];
  int mode[kJitMaxSteps];
  int vec;  // every dense operand is aligned for the kernel's vector accesses
};

}  // namespace pterun::cuda
