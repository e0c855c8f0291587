#pragma once

// The prim family: the interpreter's own operators (executorch_prim::*,
// sym_size, sym_numel, _local_scalar_dense). They work on values and
// tensor metadata, identically on every device.

#include <cstdint>

#include "pterun/core/scalar.h"
#include "pterun/core/tensor.h"
#include "pterun/core/value.h"
#include "pterun/ops/types.h"

namespace pterun::ops {

/// Python number arithmetic and comparisons on Int / Double / Bool values.
enum class BinOp { Add, Sub, Mul, FloorDiv, TrueDiv, Mod, Eq, Gt, Lt, Ge, Le, Max, Min };
enum class UnOp { Neg, Ceil, Round, Trunc, ToFloat, ToInt, Not };

/// executorch_prim::<op>.Scalar(a, b) -> out, with Python's int and float
/// rules (floor division and modulo follow the divisor's sign).
template <BinOp kOp>
void scalar_binary(KernelContext& ctx, const Value& a, const Value& b, Value& out);
/// executorch_prim::<op>.Scalar(a) -> out.
template <UnOp kOp>
void scalar_unary(KernelContext& ctx, const Value& a, Value& out);

void sym_ite(KernelContext& ctx, bool cond, Scalar a, Scalar b, Value& out);
void sym_size(KernelContext& ctx, const Tensor& self, int64_t dim, Value& out);
void sym_numel(KernelContext& ctx, const Tensor& self, Value& out);
void local_scalar_dense(KernelContext& ctx, const Tensor& self, Value& out);
void et_view(KernelContext& ctx, Tensor& self, IntList size, Tensor& out);

}  // namespace pterun::ops
