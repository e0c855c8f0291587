// Residual adds fused into the product before them (rewrite.h,
// find_gemm_add_fusions): the add runs kGemmAddKernel, whose epilogue
// adds the bias and the residual as the product is written, and the
// product's own step runs nothing. One pass over the activations and one
// launch fewer per residual connection, where the device's products take
// an addend (MatmulBackend::adds).

#include <algorithm>

#include "pterun/executor/method_loader.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {

using namespace loader_detail;  // NOLINT: the loader's own helpers

void Method::Loader::fuse_gemm_add() {
  const kernels::KernelInfo* info =
      kernels::KernelRegistry::global().info(kernels::kGemmAddKernel, m.options_.device);
  if (info == nullptr) return;
  const ChainLayout layout = chain_layout();
  for (const GemmAddFusion& f : find_gemm_add_fusions(d, kept_values(), layout.idle)) {
    if (!runs_own_operator(f.chain, f.gemm) || !runs_own_operator(f.chain, f.add)) continue;
    // The product and the view of it the add read are dropped: neither may
    // be a value a kernel re-points. The operands and out may (an earlier
    // pass's result moved to memory of its own, say): the kernel reads them
    // where they are when it runs, and its front-end checks that out
    // overlaps no operand there.
    if (aliased.count(f.product) > 0 || aliased.count(f.read) > 0) continue;
    // No view but the add's operand reads the product's bytes.
    const Tensor* read = &m.tensors_[tensor_of_value[f.read]];
    const auto viewers = followers(f.product, layout.start[f.chain] + static_cast<int64_t>(f.gemm));
    if (std::any_of(viewers.begin(), viewers.end(),
                    [&](const auto& view) { return view.first != read; })) {
      continue;
    }
    // The product reads its operands while out is written; out may be the
    // residual itself, element for element. Compared where the tensors lie
    // now: constant folding gave the weights' transposes memory of their
    // own, over bytes the plan gave to others.
    // (other and out have one shape: the same data pointer is the same
    // elements.)
    auto tensor = [&](int32_t v) -> const Tensor& { return m.tensors_[tensor_of_value[v]]; };
    const Tensor& out = tensor(f.out);
    auto apart = [&](int32_t v) { return v < 0 || !share_bytes(tensor(v), out); };
    const bool same = tensor(f.other).data() == out.data();
    if (!apart(f.mat1) || !apart(f.mat2) || !apart(f.bias) || !(same || apart(f.other))) continue;
    Step& step = m.chains_[f.chain][f.add];
    step.kind = InstructionKind::KernelCall;
    step.fn = info->fn;
    step.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
    step.args_count = 6;  // mat1, mat2, bias, other, out, and the returned out
    Value* bias = f.bias >= 0 ? &m.values_[f.bias] : &m.extra_values_.emplace_back(Value::none());
    for (Value* a : {&m.values_[f.mat1], &m.values_[f.mat2], bias, &m.values_[f.other],
                     &m.values_[f.out], &m.values_[f.out]}) {
      m.arg_pool_.push_back(a);
    }
    Step& gemm = m.chains_[f.chain][f.gemm];
    gemm.kind = InstructionKind::FreeCall;  // a no-op from now on
    gemm.fn = nullptr;
  }
}

}  // namespace pterun
