// Prim ops the interpreter provides (pte-format.md 5.7): sizes, Python
// number arithmetic on Int/Double/Bool values, and views. They read and
// write metadata only, so every backend registers these same functions;
// the two that touch tensor bytes copy through the backend on a GPU.

#include <cmath>

#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/shape_kernels.h"
#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;
using Args = std::span<Value* const>;

// Python int semantics: floor division and modulo follow the divisor's sign.
int64_t floor_div(int64_t a, int64_t b, const char* op) {
  PTERUN_CHECK(b != 0, ErrorCode::InvalidArgument, op, ": integer division by zero");
  PTERUN_CHECK(!(a == INT64_MIN && b == -1), ErrorCode::InvalidArgument, op, ": overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b, const char* op) {
  PTERUN_CHECK(b != 0, ErrorCode::InvalidArgument, op, ": integer modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

bool is_double(const Value& v) {
  return v.kind() == ValueKind::Double;
}

enum class BinOp { Add, Sub, Mul, FloorDiv, TrueDiv, Mod, Eq, Gt, Lt, Ge, Le, Max, Min };

template <BinOp kOp>
void scalar_binary(KernelContext&, Args args) {
  const char* op = "executorch_prim scalar op";
  const Value& a = *args[0];
  const Value& b = *args[1];
  Value& out = *args[2];
  const bool floating = is_double(a) || is_double(b) || kOp == BinOp::TrueDiv;
  auto as_int = [](const Value& v) {
    return v.kind() == ValueKind::Bool ? int64_t{v.to_bool()} : v.to_int();
  };
  auto as_double = [](const Value& v) {
    return v.kind() == ValueKind::Bool ? (v.to_bool() ? 1.0 : 0.0) : v.to_double();
  };
  if constexpr (kOp == BinOp::Eq || kOp == BinOp::Gt || kOp == BinOp::Lt || kOp == BinOp::Ge ||
                kOp == BinOp::Le) {
    bool r;
    if (floating) {
      double x = as_double(a), y = as_double(b);
      r = kOp == BinOp::Eq   ? x == y
          : kOp == BinOp::Gt ? x > y
          : kOp == BinOp::Lt ? x < y
          : kOp == BinOp::Ge ? x >= y
                             : x <= y;
    } else {
      int64_t x = as_int(a), y = as_int(b);
      r = kOp == BinOp::Eq   ? x == y
          : kOp == BinOp::Gt ? x > y
          : kOp == BinOp::Lt ? x < y
          : kOp == BinOp::Ge ? x >= y
                             : x <= y;
    }
    out.set_scalar(Scalar::from_bool(r));
  } else if (floating) {
    double x = as_double(a), y = as_double(b), r = 0;
    switch (kOp) {
      case BinOp::Add: r = x + y; break;
      case BinOp::Sub: r = x - y; break;
      case BinOp::Mul: r = x * y; break;
      case BinOp::TrueDiv:
        PTERUN_CHECK(y != 0, ErrorCode::InvalidArgument, op, ": division by zero");
        r = x / y;
        break;
      case BinOp::FloorDiv:
        PTERUN_CHECK(y != 0, ErrorCode::InvalidArgument, op, ": division by zero");
        r = std::floor(x / y);
        break;
      case BinOp::Mod:
        PTERUN_CHECK(y != 0, ErrorCode::InvalidArgument, op, ": modulo by zero");
        r = x - std::floor(x / y) * y;
        break;
      case BinOp::Max: r = std::fmax(x, y); break;
      case BinOp::Min: r = std::fmin(x, y); break;
      default: break;
    }
    out.set_scalar(Scalar::from_double(r));
  } else {
    int64_t x = as_int(a), y = as_int(b), r = 0;
    switch (kOp) {
      case BinOp::Add:
        r = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
        break;
      case BinOp::Sub:
        r = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
        break;
      case BinOp::Mul:
        r = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
        break;
      case BinOp::FloorDiv: r = floor_div(x, y, op); break;
      case BinOp::Mod: r = floor_mod(x, y, op); break;
      case BinOp::Max: r = std::max(x, y); break;
      case BinOp::Min: r = std::min(x, y); break;
      default: break;
    }
    out.set_scalar(Scalar::from_int(r));
  }
}

enum class UnOp { Neg, Ceil, Round, Trunc, ToFloat, ToInt, Not };

template <UnOp kOp>
void scalar_unary(KernelContext&, Args args) {
  const Value& a = *args[0];
  Value& out = *args[1];
  if constexpr (kOp == UnOp::Not) {
    out.set_scalar(Scalar::from_bool(!a.to_bool()));
  } else if (a.kind() == ValueKind::Double) {
    double x = a.to_double();
    switch (kOp) {
      case UnOp::Neg: out.set_scalar(Scalar::from_double(-x)); break;
      case UnOp::Ceil: out.set_scalar(Scalar::from_int(static_cast<int64_t>(std::ceil(x)))); break;
      case UnOp::Round:
        out.set_scalar(Scalar::from_int(static_cast<int64_t>(std::nearbyint(x))));
        break;
      case UnOp::Trunc:
        out.set_scalar(Scalar::from_int(static_cast<int64_t>(std::trunc(x))));
        break;
      case UnOp::ToFloat: out.set_scalar(Scalar::from_double(x)); break;
      case UnOp::ToInt: out.set_scalar(Scalar::from_int(static_cast<int64_t>(x))); break;
      default: break;
    }
  } else {
    int64_t x = a.kind() == ValueKind::Bool ? int64_t{a.to_bool()} : a.to_int();
    if (kOp == UnOp::Neg) {
      out.set_scalar(Scalar::from_int(-x));
    } else if (kOp == UnOp::ToFloat) {
      out.set_scalar(Scalar::from_double(static_cast<double>(x)));
    } else {
      out.set_scalar(Scalar::from_int(x));
    }
  }
}

// sym_ite(cond, a, b) -> a if cond else b.
void sym_ite(KernelContext&, Args args) {
  args[3]->set_scalar(args[0]->to_bool() ? args[1]->to_scalar() : args[2]->to_scalar());
}

// aten::sym_size.int(Tensor self, int dim) -> SymInt
void sym_size(KernelContext&, Args args) {
  const Tensor& t = args[0]->to_tensor();
  int64_t d =
      kernels::wrap_dim(args[1]->to_int(), static_cast<int64_t>(t.dim()), "aten::sym_size.int");
  PTERUN_CHECK(t.dim() > 0, ErrorCode::InvalidArgument, "aten::sym_size.int: tensor has rank 0");
  args[2]->set_int(t.size(d));
}

// aten::sym_numel(Tensor self) -> SymInt
void sym_numel(KernelContext&, Args args) {
  args[1]->set_int(args[0]->to_tensor().numel());
}

// aten::_local_scalar_dense(Tensor self) -> Scalar
// On a GPU the element is copied down, which waits for the stream (the
// scalar steers the host, like a JumpFalse on a device value).
void local_scalar_dense(KernelContext& ctx, Args args) {
  const Tensor& t = args[0]->to_tensor();
  PTERUN_CHECK(t.numel() == 1, ErrorCode::InvalidArgument,
               "aten::_local_scalar_dense: expected one element, got ", describe(t));
  alignas(16) unsigned char host[16] = {};
  const void* src = t.data();
  if (ctx.device == kernels::Device::CUDA) {
    PTERUN_CHECK(t.element_size() <= sizeof(host), ErrorCode::InvalidArgument,
                 "aten::_local_scalar_dense: unsupported ", describe(t));
    backend::copy_device_to_host(ctx, host, src, t.element_size());
    backend::synchronize(ctx);
    src = host;
  }
  kernels::visit(t.dtype(), kernels::Family::RealHBBF16, "aten::_local_scalar_dense",
                 [&]<typename T>() {
                   T v = *static_cast<const T*>(src);
                   if constexpr (std::is_same_v<T, bool>) {
                     args[1]->set_scalar(Scalar::from_bool(v));
                   } else if constexpr (std::is_integral_v<T>) {
                     args[1]->set_scalar(Scalar::from_int(static_cast<int64_t>(v)));
                   } else {
                     args[1]->set_scalar(Scalar::from_double(static_cast<float>(v)));
                   }
                 });
}

// executorch_prim::et_view.default(Tensor self, int[] size) -> Tensor: the
// output shares self's memory (no copy).
void et_view(KernelContext&, Args args) {
  const char* op = "executorch_prim::et_view.default";
  Tensor& self = args[0]->to_tensor();
  auto sizes = args[1]->to_int_list();
  Tensor& out = args[2]->to_tensor();
  PTERUN_CHECK(sizes.size() == out.dim(), ErrorCode::InvalidArgument, op, ": size has ",
               sizes.size(), " entries for an output of rank ", out.dim());
  kernels::Shape shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      PTERUN_CHECK(infer < 0, ErrorCode::InvalidArgument, op, ": more than one -1 in size");
      infer = static_cast<int>(i);
      shape.push_back(1);
      continue;
    }
    PTERUN_CHECK(sizes[i] >= 0, ErrorCode::InvalidArgument, op, ": negative size ", sizes[i]);
    shape.push_back(sizes[i]);
    known *= sizes[i];
  }
  if (infer >= 0) {
    PTERUN_CHECK(known != 0 && self.numel() % known == 0, ErrorCode::InvalidArgument, op,
                 ": cannot infer -1 for ", self.numel(), " elements");
    shape.dims[infer] = self.numel() / known;
  }
  PTERUN_CHECK(shape.numel() == self.numel(), ErrorCode::InvalidArgument, op, ": a view of ",
               describe(self), " cannot have ", shape.numel(), " elements");
  PTERUN_CHECK(self.is_contiguous_order() && out.is_contiguous_order(), ErrorCode::InvalidArgument,
               op, ": views need the default dim order");
  PTERUN_CHECK(out.dtype() == self.dtype(), ErrorCode::InvalidArgument, op,
               ": dtype differs between self and out");
  out.reshape_unchecked(shape.span(), out.dim_order());
  out.set_data(self.data(), self.capacity());
}

}  // namespace

// et_copy_index moves bytes: a shape kernel (shape_kernels.h), shared with
// the CUDA backend.
namespace shape {

// executorch_prim::et_copy_index.tensor(Tensor copy_to, Tensor copy_from,
// int index): copy_to[index] = copy_from, growing copy_to's first dim.
void et_copy_index(const Mover& m, KernelContext& ctx, Args args) {
  const char* op = "executorch_prim::et_copy_index.tensor";
  Tensor& to = args[0]->to_tensor();
  const Tensor& from = args[1]->to_tensor();
  int64_t index = args[2]->to_int();
  PTERUN_CHECK(to.dim() == from.dim() + 1 && to.dtype() == from.dtype(), ErrorCode::InvalidArgument,
               op, ": cannot copy ", describe(from), " into ", describe(to));
  PTERUN_CHECK(to.is_contiguous_order() && from.is_contiguous_order(), ErrorCode::InvalidArgument,
               op, ": needs the default dim order");
  for (size_t d = 0; d < from.dim(); ++d) {
    PTERUN_CHECK(to.size(d + 1) == from.size(d), ErrorCode::InvalidArgument, op, ": shape of ",
                 describe(from), " does not match ", describe(to));
  }
  PTERUN_CHECK(index >= 0, ErrorCode::IndexOutOfRange, op, ": negative index ", index);
  if (index >= to.size(0)) {
    kernels::Shape s;
    for (size_t d = 0; d < to.dim(); ++d) s.push_back(d == 0 ? index + 1 : to.size(d));
    kernels::resize_output(to, s.span(), op);
  }
  const size_t row = from.nbytes();
  copy_dense(m, ctx, static_cast<char*>(to.data()) + static_cast<size_t>(index) * row, from.data(),
             from.numel(), from.element_size());
}

}  // namespace shape

void register_prim_ops(kernels::KernelRegistry& r) {
  using kernels::Device;
  for (Device d : {Device::CPU, Device::CUDA}) {
    r.add("aten::sym_size.int", d, &sym_size);
    r.add("aten::sym_numel", d, &sym_numel);
    r.add("executorch_prim::et_view.default", d, &et_view);
    r.add("executorch_prim::add.Scalar", d, &scalar_binary<BinOp::Add>);
    r.add("executorch_prim::sub.Scalar", d, &scalar_binary<BinOp::Sub>);
    r.add("executorch_prim::mul.Scalar", d, &scalar_binary<BinOp::Mul>);
    r.add("executorch_prim::floordiv.Scalar", d, &scalar_binary<BinOp::FloorDiv>);
    r.add("executorch_prim::floordiv.int", d, &scalar_binary<BinOp::FloorDiv>);
    r.add("executorch_prim::truediv.Scalar", d, &scalar_binary<BinOp::TrueDiv>);
    r.add("executorch_prim::mod.Scalar", d, &scalar_binary<BinOp::Mod>);
    r.add("executorch_prim::mod.int", d, &scalar_binary<BinOp::Mod>);
    r.add("executorch_prim::eq.Scalar", d, &scalar_binary<BinOp::Eq>);
    r.add("executorch_prim::gt.Scalar", d, &scalar_binary<BinOp::Gt>);
    r.add("executorch_prim::lt.Scalar", d, &scalar_binary<BinOp::Lt>);
    r.add("executorch_prim::ge.Scalar", d, &scalar_binary<BinOp::Ge>);
    r.add("executorch_prim::le.Scalar", d, &scalar_binary<BinOp::Le>);
    r.add("executorch_prim::sym_max.Scalar", d, &scalar_binary<BinOp::Max>);
    r.add("executorch_prim::sym_min.Scalar", d, &scalar_binary<BinOp::Min>);
    r.add("executorch_prim::neg.Scalar", d, &scalar_unary<UnOp::Neg>);
    r.add("executorch_prim::ceil.Scalar", d, &scalar_unary<UnOp::Ceil>);
    r.add("executorch_prim::round.Scalar", d, &scalar_unary<UnOp::Round>);
    r.add("executorch_prim::trunc.Scalar", d, &scalar_unary<UnOp::Trunc>);
    r.add("executorch_prim::sym_float.Scalar", d, &scalar_unary<UnOp::ToFloat>);
    r.add("executorch_prim::sym_int.Scalar", d, &scalar_unary<UnOp::ToInt>);
    r.add("executorch_prim::sym_not.Scalar", d, &scalar_unary<UnOp::Not>);
    r.add("executorch_prim::sym_ite.Scalar", d, &sym_ite);
  }
  // Reads tensor memory: on a GPU it copies the scalar down (and waits).
  for (Device d : {Device::CPU, Device::CUDA})
    r.add("aten::_local_scalar_dense", d, &local_scalar_dense);
}

}  // namespace pterun::cpu
