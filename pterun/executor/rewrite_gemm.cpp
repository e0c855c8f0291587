// Residual adds after a product (rewrite.h, find_gemm_add_fusions): an
// addmm or mm whose result one add.out reads alone, found from a method's
// instructions alone, to run as one product whose epilogue adds the bias
// and the residual.

#include "pterun/executor/chain_view.h"
#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"

namespace pterun {
namespace {

using detail::ChainView;
using format::InstructionKind;

bool floating_gemm_dtype(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
}

/// Whether `view` is a second tensor over exactly `product`'s planned bytes
/// with its dtype and elements in default order (a reshape the exporter
/// resolved by planning) that no instruction writes.
bool planned_alias(const format::MethodDesc& d, int32_t product, int32_t view) {
  const format::TensorDesc* p = desc::tensor_of(d, product);
  const format::TensorDesc* v = desc::tensor_of(d, view);
  if (p == nullptr || v == nullptr || !desc::same_bytes(*p, *v) ||
      v->dynamism != ShapeDynamism::Static) {
    return false;
  }
  for (const auto& chain : d.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind == InstructionKind::KernelCall && !instr.args.empty() &&
          instr.args.back() == view) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<GemmAddFusion> find_gemm_add_fusions(const format::MethodDesc& d,
                                                 const std::vector<bool>& keep,
                                                 const std::vector<std::vector<bool>>& idle) {
  std::vector<GemmAddFusion> found;
  detail::for_each_chain(d, keep, idle, [&](const ChainView& v) {
    const auto& instrs = v.instrs();
    const std::vector<int>& uses = v.uses;
    auto tensor = [&](int32_t t) { return desc::tensor_of(d, t); };
    // A static tensor of `dtype` in default dim order.
    auto plain = [&](int32_t t, DType dtype) {
      const format::TensorDesc* x = tensor(t);
      return x != nullptr && x->dtype == dtype && x->dynamism == ShapeDynamism::Static &&
             desc::default_order(*x);
    };
    for (size_t k = 0; k < instrs.size(); ++k) {
      if (!v.running(k)) continue;
      GemmAddFusion f;
      f.chain = v.c;
      f.gemm = k;
      // addmm.out(self, mat1, mat2, beta, alpha, *, out) with a bias row and
      // beta = alpha = 1, or mm.out(self, mat2, *, out).
      if (v.is_kernel(k, "aten::addmm.out", 7)) {
        const auto& a = instrs[k].args;
        if (a[6] != a[5] || !v.number_is(a[3], 1) || !v.number_is(a[4], 1)) continue;
        f.bias = a[0];
        f.mat1 = a[1];
        f.mat2 = a[2];
        f.product = a[5];
      } else if (v.is_kernel(k, "aten::mm.out", 4)) {
        const auto& a = instrs[k].args;
        if (a[3] != a[2]) continue;
        f.mat1 = a[0];
        f.mat2 = a[1];
        f.product = a[2];
      } else {
        continue;
      }
      const format::TensorDesc* y = tensor(f.product);
      const format::TensorDesc* m1 = tensor(f.mat1);
      const format::TensorDesc* m2 = tensor(f.mat2);
      if (y == nullptr || m1 == nullptr || m2 == nullptr || !floating_gemm_dtype(y->dtype) ||
          y->sizes.size() != 2 || keep[f.product] || m1->dtype != y->dtype ||
          m2->dtype != y->dtype || m1->sizes.size() != 2 || m2->sizes.size() != 2 ||
          !plain(f.product, y->dtype)) {
        continue;
      }
      const int64_t n = y->sizes[1];
      if (f.bias >= 0) {
        const format::TensorDesc* b = tensor(f.bias);
        if (b == nullptr || b->dtype != y->dtype || b->sizes.size() != 1 || b->sizes[0] != n) {
          continue;
        }
      }
      // add.out(self, other, alpha 1, *, out), the next step that runs,
      // reading the product (or a planned view of it) as one operand.
      const size_t l = v.next_running(k);
      if (l >= instrs.size() || !v.is_kernel(l, "aten::add.out", 5)) continue;
      const auto& add = instrs[l].args;
      if (!v.number_is(add[2], 1) || add[4] != add[3]) continue;
      int32_t read = -1;
      for (int side = 0; side < 2 && read < 0; ++side) {
        const int32_t x = add[side];
        if (x == f.product && uses[x] == 2) read = x;
        if (x != f.product && uses[f.product] == 1 && uses[x] == 1 && !keep[x] &&
            planned_alias(d, f.product, x)) {
          read = x;
        }
        if (read >= 0) f.other = add[1 - side];
      }
      if (read < 0 || f.other == read) continue;
      const format::TensorDesc* r = tensor(read);
      const format::TensorDesc* o = tensor(f.other);
      f.out = add[3];
      const format::TensorDesc* s = tensor(f.out);
      if (!plain(read, y->dtype) || !plain(f.other, y->dtype) || !plain(f.out, y->dtype) ||
          o->sizes != r->sizes || s->sizes != r->sizes || r->sizes.empty() ||
          r->sizes.back() != n) {
        continue;
      }
      f.add = l;
      f.read = read;
      found.push_back(f);
      k = l;
    }
  });
  return found;
}

}  // namespace pterun
