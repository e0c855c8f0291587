#include "pterun/backend/cuda/ops/index_plan.h"

#include "pterun/kernels/common/index_util.h"

namespace pterun::kernels::cuda_ops {

AdvancedParams advanced_params(const IndexPlan& plan, const Tensor& self,
                               std::span<const int64_t> target_strides,
                               std::span<const int64_t> other_strides) {
  AdvancedParams p;
  p.rank = static_cast<int>(plan.result.rank);
  p.numel = plan.result.numel();
  for (size_t r = 0; r < plan.result.rank; ++r) {
    const int sd = plan.result_self_dim[r];
    p.sizes[r] = plan.result.dims[r];
    p.target[r] = sd >= 0 ? target_strides[static_cast<size_t>(sd)] : 0;
    p.other[r] = other_strides[r];
    p.index_dim[r] = sd >= 0 ? -1 : plan.result_index_dim[r];
  }
  const size_t ir = plan.index_shape.rank;
  p.index_rank = static_cast<int>(ir);
  p.num_sources = static_cast<int>(plan.num_sources);
  for (size_t k = 0; k < plan.num_sources; ++k) {
    const IndexSource& s = plan.sources[k];
    const Tensor& t = *s.tensor;
    p.data[k] = t.data();
    p.is64[k] = t.dtype() == DType::Int64;
    p.size[k] = self.size(s.self_dim);
    p.stride[k] = target_strides[s.self_dim];
    // Broadcast over the index shape, right-aligned (as run_index_plan).
    for (size_t i = 0; i < ir; ++i) {
      int64_t st = 0;
      if (i >= ir - t.dim()) {
        const size_t ti = i - (ir - t.dim());
        st = t.size(ti) == 1 ? 0 : t.stride(ti);
      }
      p.source_strides[k][i] = st;
    }
  }
  return p;
}

}  // namespace pterun::kernels::cuda_ops
