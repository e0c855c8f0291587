// Prim ops the interpreter provides: sizes, Python
// number arithmetic on Int/Double/Bool values, and views. They read and
// write metadata only, so they are the same for every device;
// _local_scalar_dense copies its element down from a GPU.

#include "pterun/ops/prim.h"

#include <cmath>

#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/value.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/shape_util.h"

namespace pterun::ops {
namespace {

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

}  // namespace

template <BinOp kOp>
void scalar_binary(KernelContext&, const Value& a, const Value& b, Value& out) {
  const char* op = "executorch_prim scalar op";
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

template <UnOp kOp>
void scalar_unary(KernelContext&, const Value& a, Value& out) {
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

template void scalar_binary<BinOp::Add>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Sub>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Mul>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::FloorDiv>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::TrueDiv>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Mod>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Eq>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Gt>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Lt>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Ge>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Le>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Max>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_binary<BinOp::Min>(KernelContext&, const Value&, const Value&, Value&);
template void scalar_unary<UnOp::Neg>(KernelContext&, const Value&, Value&);
template void scalar_unary<UnOp::Ceil>(KernelContext&, const Value&, Value&);
template void scalar_unary<UnOp::Round>(KernelContext&, const Value&, Value&);
template void scalar_unary<UnOp::Trunc>(KernelContext&, const Value&, Value&);
template void scalar_unary<UnOp::ToFloat>(KernelContext&, const Value&, Value&);
template void scalar_unary<UnOp::ToInt>(KernelContext&, const Value&, Value&);
template void scalar_unary<UnOp::Not>(KernelContext&, const Value&, Value&);

// sym_ite(cond, a, b) -> a if cond else b.
void sym_ite(KernelContext&, bool cond, Scalar a, Scalar b, Value& out) {
  out.set_scalar(cond ? a : b);
}

// aten::sym_size.int(Tensor self, int dim) -> SymInt
void sym_size(KernelContext&, const Tensor& t, int64_t dim, Value& out) {
  int64_t d = kernels::wrap_dim(dim, static_cast<int64_t>(t.dim()), "aten::sym_size.int");
  PTERUN_CHECK(t.dim() > 0, ErrorCode::InvalidArgument, "aten::sym_size.int: tensor has rank 0");
  out.set_int(t.size(d));
}

// aten::sym_numel(Tensor self) -> SymInt
void sym_numel(KernelContext&, const Tensor& t, Value& out) {
  out.set_int(t.numel());
}

// aten::_local_scalar_dense(Tensor self) -> Scalar
// On a GPU the element is copied down, which waits for the stream (the
// scalar steers the host, like a JumpFalse on a device value).
void local_scalar_dense(KernelContext& ctx, const Tensor& t, Value& out) {
  PTERUN_CHECK(t.numel() == 1, ErrorCode::InvalidArgument,
               "aten::_local_scalar_dense: expected one element, got ", describe(t));
  alignas(16) unsigned char host[16] = {};
  const void* src = t.data();
  if (ctx.device == Device::CUDA) {
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
                     out.set_scalar(Scalar::from_bool(v));
                   } else if constexpr (std::is_integral_v<T>) {
                     out.set_scalar(Scalar::from_int(static_cast<int64_t>(v)));
                   } else {
                     out.set_scalar(Scalar::from_double(static_cast<float>(v)));
                   }
                 });
}

// executorch_prim::et_view.default(Tensor self, int[] size) -> Tensor: the
// output shares self's memory (no copy).
void et_view(KernelContext&, Tensor& self, IntList sizes, Tensor& out) {
  const char* op = "executorch_prim::et_view.default";
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

}  // namespace pterun::ops
