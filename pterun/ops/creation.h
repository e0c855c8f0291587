#pragma once

// The creation family: fills (full, zeros, ones, fill, scalar_tensor and the
// *_like forms), empty (shape only) and ranges (arange, linspace). The
// output's dtype decides the element type. Scalar fills go through the
// device's Mover (shape.h); the tensor fill and the ranges need the
// backend.

#include <cstdint>
#include <optional>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// out[i] = start + i * step for the non-empty 1-D `out` (RealHBF16),
/// following ATen: integer outputs use start and step truncated to int64;
/// floating outputs compute in double (float for f16/bf16).
struct ArangeArgs {
  Tensor& out;
  Scalar start;
  Scalar step;
  const char* op;  // arange.out or arange.start_out, for errors
};

/// `steps` (> 0) evenly spaced values from start to end into the 1-D `out`
/// (RealHBF16), the first half counted from start and the second from end
/// (as ATen does); integer outputs step in double from start and end
/// truncated to int64.
struct LinspaceArgs {
  Tensor& out;
  Scalar start;
  Scalar end;
  int64_t steps;
};

struct CreationBackend {
  /// Every element of out = the 0-dim `value` (on this device) converted
  /// to out's dtype.
  void (*fill_tensor)(KernelContext& ctx, Tensor& out, const Tensor& value, const char* op);
  void (*arange)(KernelContext& ctx, const ArangeArgs& a);
  void (*linspace)(KernelContext& ctx, const LinspaceArgs& a);
};

// full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out)
void full_out(KernelContext& ctx, IntList size, Scalar fill_value, Tensor& out);
// full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None,
//   Tensor(a!) out)
void full_like_out(KernelContext& ctx, const Tensor& self, Scalar fill_value,
                   std::optional<int64_t> memory_format, Tensor& out);
// scalar_tensor.out(Scalar s, *, Tensor(a!) out): a 0-dim tensor holding s.
void scalar_tensor_out(KernelContext& ctx, Scalar s, Tensor& out);
// zeros.out(SymInt[] size, *, Tensor(a!) out)
void zeros_out(KernelContext& ctx, IntList size, Tensor& out);
// ones.out(SymInt[] size, *, Tensor(a!) out)
void ones_out(KernelContext& ctx, IntList size, Tensor& out);
// zeros_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void zeros_like_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> memory_format,
                    Tensor& out);
// ones_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void ones_like_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> memory_format,
                   Tensor& out);
// empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out): shape only.
void empty_out(KernelContext& ctx, IntList size, std::optional<int64_t> memory_format, Tensor& out);
// empty_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
void empty_like_out(KernelContext& ctx, const Tensor& self, std::optional<int64_t> memory_format,
                    Tensor& out);
// fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out)
void fill_scalar_out(KernelContext& ctx, const Tensor& self, Scalar value, Tensor& out);
// fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out): value is 0-dim.
void fill_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& value, Tensor& out);
// arange.out(Scalar end, *, Tensor(a!) out)
void arange_out(KernelContext& ctx, Scalar end, Tensor& out);
// arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out)
void arange_start_out(KernelContext& ctx, Scalar start, Scalar end, Scalar step, Tensor& out);
// linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out)
void linspace_out(KernelContext& ctx, Scalar start, Scalar end, int64_t steps, Tensor& out);

}  // namespace pterun::ops
