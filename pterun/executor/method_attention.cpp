// Attention fusion at load (rewrite.h, find_attention_fusions): torch's
// decomposed scaled-dot-product attention, a dozen steps or more (layout
// copies of the queries, keys and values, two products, the scale, the
// mask, the softmax and the copies of the result), runs as one attention
// kernel (kernels/internal_ops.h, kAttentionKernel) that reads the
// queries, keys and values where the program left them and writes the
// result where the program's next step reads it.

#include <algorithm>

#include "pterun/backend/device.h"
#include "pterun/executor/method_loader.h"
#include "pterun/executor/rewrite.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun {

using namespace loader_detail;  // NOLINT: the loader's own helpers

// Where the fused kernel is ahead of the steps it replaces. On the CPU it
// takes a row of queries at a time and is ahead while a head's scores are
// few (gpt, 16 tokens: 78 against 85 µs a call; 128 tokens: 1.00 against
// 0.88 ms). On CUDA, attentions whose head_dim is 16, 32, 64 or 128 run
// tiled (float16 and bfloat16 of 16 queries or more on the tensor cores,
// backend/cuda/ops/attention_mma.cu; float32 of 64 or more on CUDA cores,
// attention_tiled.cu) and are fused whatever their size; the others run a
// query at a time, whose launches beat the steps' while the whole
// attention is small, and cuBLAS's products win past that (H100, before
// the tiled kernels: float32 gpt at batch 1, 165 against 179 µs; bfloat16
// at batch 8 and 128 tokens, 268 against 166).
constexpr int64_t kCpuMaxHeadScores = 32 * 32;
constexpr int64_t kCudaMaxScores = 64 * 1024;

namespace {

/// Whether CUDA's tiled attention takes queries `q` ([B, S, H, D]) of
/// `dtype` over `keys` keys (attention_mma.h and attention_tiled.h say
/// when).
bool cuda_tiled_attention(DType dtype, const std::vector<int64_t>& q, int64_t keys) {
  const int64_t dim = q[3];
  const bool half = dtype == DType::Float16 || dtype == DType::BFloat16;
  const int64_t f32_min = keys <= 256 ? 16 : 64;
  return (half ? q[1] >= 16 : dtype == DType::Float32 && q[1] >= f32_min) &&
         (dim == 16 || dim == 32 || dim == 64 || dim == 128);
}

}  // namespace

void Method::Loader::fuse_attention() {
  const kernels::KernelInfo* info =
      kernels::KernelRegistry::global().info(kernels::kAttentionKernel, m.options_.device);
  if (info == nullptr) return;
  const ChainLayout layout = chain_layout();
  const std::vector<bool> keep = kept_values();
  const bool cpu = m.options_.device == Device::CPU;
  for (const AttentionFusion& f : find_attention_fusions(d, keep, layout.idle)) {
    const int64_t head_scores = f.q.sizes[1] * f.k.sizes[1];
    const int64_t scores = head_scores * f.q.sizes[0] * f.q.sizes[2];
    const bool tiled =
        !cpu && cuda_tiled_attention(d.values[f.q.value].tensor->dtype, f.q.sizes, f.k.sizes[1]);
    if (cpu ? head_scores > kCpuMaxHeadScores : scores > kCudaMaxScores && !tiled) {
      continue;
    }
    if (!runs_own_operator(f.chain, f.at) ||
        std::any_of(f.idle.begin(), f.idle.end(),
                    [&](size_t k) { return !runs_own_operator(f.chain, k); })) {
      continue;
    }
    // The kernel reads every query, key and value before it writes the last
    // result: a result the memory plan put over them gets memory of its own.
    const TensorDesc& out = *d.values[f.out.value].tensor;
    const bool clash = std::any_of(f.reads.begin(), f.reads.end(), [&](const auto& read) {
      const TensorDesc& t = *d.values[read.first].tensor;
      return is_planned(t) && is_planned(out) && overlaps(t, out);
    });
    // Views of values a kernel re-points at run time cannot follow them.
    bool moving = aliased.count(f.out.value) > 0;
    for (const AttentionFusion::View* v : {&f.q, &f.k, &f.v}) {
      moving = moving || aliased.count(v->value) > 0;
    }
    if (moving || (f.mask && aliased.count(f.mask->value) > 0)) continue;
    if (clash) {
      if (keep[f.out.value]) continue;
      give_own_memory(f.out.value);
    }
    auto value_of = [&](const AttentionFusion::View& v) -> Value* {
      pinned.insert(v.value);
      if (v.whole) return &m.values_[v.value];
      const Tensor& t = m.tensors_[tensor_of_value[v.value]];
      Tensor& view =
          m.extra_tensors_.emplace_back(t.dtype(), v.sizes, v.dim_order, ShapeDynamism::Static);
      // A window of a packed projection: the finder kept every element
      // inside the value's static bytes.
      const size_t offset = static_cast<size_t>(v.offset) * t.element_size();
      if (!v.strides.empty()) view.set_strides_unchecked(v.strides);
      view.set_data(static_cast<char*>(t.data()) + offset, t.capacity() - offset);
      views.push_back({&view, &t, offset});
      return &m.extra_values_.emplace_back(Value::from_tensor(&view));
    };
    Value* q = value_of(f.q);
    Value* k = value_of(f.k);
    Value* v = value_of(f.v);
    Value* mask = f.mask ? value_of(*f.mask) : &m.extra_values_.emplace_back(Value::none());
    Value* scale = &m.extra_values_.emplace_back(Value::from_double(f.scale));
    Value* zero_rows = &m.extra_values_.emplace_back(Value::from_bool(f.empty_rows_zero));
    Value* result = value_of(f.out);
    Step& step = m.chains_[f.chain][f.at];
    step.kind = InstructionKind::KernelCall;
    step.fn = info->fn;
    step.args_begin = static_cast<uint32_t>(m.arg_pool_.size());
    step.args_count = 8;  // q, k, v, mask, scale, empty_rows_zero, out, and the returned out
    for (Value* a : {q, k, v, mask, scale, zero_rows, result, result}) m.arg_pool_.push_back(a);
    for (size_t i : f.idle) {
      m.chains_[f.chain][i].kind = InstructionKind::FreeCall;  // a no-op from now on
      m.chains_[f.chain][i].fn = nullptr;
    }
  }
}

// The views see the bytes their tensors hold after the passes, and follow
// an input or an output (or a view of one) that a call re-points.
void Method::Loader::follow_views() {
  for (auto [view, source, offset] : views) {
    view->set_data(static_cast<char*>(source->data()) + offset, source->capacity() - offset);
    auto follow = [&](std::vector<std::pair<Tensor*, size_t>>& list, const Tensor* tensor) {
      if (tensor == source) list.emplace_back(view, offset);
      for (size_t j = 0, n = list.size(); j < n; ++j) {
        if (list[j].first == source) list.emplace_back(view, list[j].second + offset);
      }
    };
    for (size_t i = 0; i < d.inputs.size() && i < m.input_followers_.size(); ++i) {
      const Value& v = m.values_[d.inputs[i]];
      follow(m.input_followers_[i], v.is_tensor() ? &v.to_tensor() : nullptr);
    }
    for (size_t i = 0; i < d.outputs.size() && i < m.output_followers_.size(); ++i) {
      const Value& v = m.values_[d.outputs[i]];
      follow(m.output_followers_[i], v.is_tensor() ? &v.to_tensor() : nullptr);
    }
  }
}

}  // namespace pterun
