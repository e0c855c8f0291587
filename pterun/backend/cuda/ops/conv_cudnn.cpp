// cudnn_conv (conv_cudnn.h): a forward convolution in cuDNN, for float32,
// float16 and bfloat16 problems that are not transposed and whose weight is
// dense in torch's order ([oc, ic/groups, kh, kw]) or channels-last; input
// and output keep whatever strides they have. Float32 uses CUDA cores
// unless the method allows TF32; float16 and bfloat16 use tensor cores,
// accumulating in float. The bias is added by cudnnAddTensor after the
// convolution.
//
// A plan (descriptors and the fastest algorithm when cuDNN times the
// heuristic's candidates on the first call's tensors, else the one the
// heuristic ranks first, with its workspace) is made on the first call of
// each problem and kept for the process, so later calls, graph captures
// included, only launch. Where the first call may time, the graph API's
// plans (conv_cudnn_graph.h: engines the legacy algorithms lack, bfloat16
// tensor-core kernels among them) run against that algorithm and the
// fastest is kept. The workspace comes from the method's device scratch.

#include "pterun/backend/cuda/ops/conv_cudnn.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/cudnn_api.h"
#include "pterun/backend/cuda/ops/conv_cudnn_graph.h"
#include "pterun/backend/cuda/ops/time_runs.h"
#include "pterun/backend/cuda/plan_key.h"

namespace pterun::cuda::nn {
namespace {

/// Workspace a plan may ask for.
constexpr size_t kMaxWorkspace = size_t{256} << 20;

struct Key {
  int device;
  int dtype;
  int tf32;
  int filter_format;
  int64_t groups, n, ic, oc, ih, iw, oh, ow, kh, kw;
  int64_t stride[2], pad[2], dilation[2];
  int64_t in_strides[4], out_strides[4];
  uint32_t align_in, align_weight, align_out, has_bias;
};

struct Plan {
  bool usable = false;  // false: cuDNN refused the problem; the caller falls back
  cudnn::TensorDesc x = nullptr, y = nullptr, bias = nullptr;
  cudnn::FilterDesc w = nullptr;
  cudnn::ConvDesc conv = nullptr;
  int algo = 0;
  GraphPlan graph;  // when it timed faster than `algo`
  size_t workspace = 0;
};

bool fits(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

/// Strides for cuDNN: a dim of size 1 takes the span of the others (any
/// stride is the same there, and cuDNN checks that tensors do not overlap).
void strides_for(const int64_t sizes[4], const int64_t in[4], int64_t out[4]) {
  int64_t span = 1;
  for (int i = 0; i < 4; ++i) {
    if (sizes[i] > 1) span = std::max(span, in[i] * sizes[i]);
  }
  for (int i = 0; i < 4; ++i) out[i] = sizes[i] > 1 ? in[i] : span;
}

/// Whether `strides` are the dense ones of `order` (dims outermost first)
/// over `sizes`, ignoring dims of size 1.
bool dense_in(const int64_t sizes[4], const int64_t strides[4], const int order[4]) {
  int64_t expect = 1;
  for (int j = 3; j >= 0; --j) {
    const int d = order[j];
    if (sizes[d] > 1 && strides[d] != expect) return false;
    expect *= sizes[d];
  }
  return true;
}

cudnn::DataType data_type(DType t) {
  return t == DType::Float16    ? cudnn::kHalf
         : t == DType::BFloat16 ? cudnn::kBFloat16
                                : cudnn::kFloat;
}

/// Strides for the graph API, whose engines recognise layouts by them: a
/// tensor dense in NCHW or NHWC order (dims of size 1 ignored; the input's
/// layout first where both hold) gets that order's own strides, else the
/// legacy API's.
void graph_strides(const int64_t sizes[4], const int64_t in[4], bool channels_last,
                   int64_t out[4]) {
  static constexpr int kNchw[4] = {0, 1, 2, 3}, kNhwc[4] = {0, 2, 3, 1};
  const int* orders[2] = {channels_last ? kNhwc : kNchw, channels_last ? kNchw : kNhwc};
  for (const int* order : orders) {
    if (!dense_in(sizes, in, order)) continue;
    int64_t stride = 1;
    for (int j = 3; j >= 0; --j) {
      out[order[j]] = stride;
      stride *= std::max<int64_t>(sizes[order[j]], 1);
    }
    return;
  }
  strides_for(sizes, in, out);
}

/// Enqueues `plan` for q: its graph plan where it has one, else its legacy
/// algorithm.
cudnn::Status run_plan(const cudnn::Api& a, cudnn::Handle h, const Plan& plan,
                       const ops::ConvProblem& q, void* workspace) {
  if (plan.graph.plan != nullptr) {
    return graph_conv_run(a, h, plan.graph, q.in, q.weight, q.out, workspace);
  }
  const float one = 1.0f, zero = 0.0f;
  return a.forward(h, &one, plan.x, q.in, plan.w, q.weight, plan.conv, plan.algo, workspace,
                   plan.workspace, &zero, plan.y, q.out);
}

/// The graph API's plans for the problem, timed on this call's tensors
/// against the legacy algorithm of `plan`: the fastest of them replaces it.
void try_graph(kernels::KernelContext& ctx, const cudnn::Api& a, cudnn::Handle h,
               const ops::ConvProblem& q, const Key& k, Plan& plan) {
  if (a.create_backend == nullptr) return;
  GraphConvShape g{};
  g.data_type = data_type(q.dtype);
  const int64_t x_dims[4] = {q.n, q.ic, q.ih, q.iw}, y_dims[4] = {q.n, q.oc, q.oh, q.ow};
  const int64_t w_dims[4] = {q.oc, q.ic / q.groups, q.kh, q.kw};
  const bool channels_last = q.in_strides[1] == 1 && q.ic > 1;
  graph_strides(x_dims, q.in_strides, channels_last, g.x_strides);
  graph_strides(w_dims, q.w_strides, channels_last, g.w_strides);
  graph_strides(y_dims, q.out_strides, channels_last, g.y_strides);
  for (int i = 0; i < 4; ++i) {
    g.x_dims[i] = x_dims[i];
    g.y_dims[i] = y_dims[i];
    g.w_dims[i] = w_dims[i];
  }
  for (int i = 0; i < 2; ++i) {
    g.pad[i] = q.pad[i];
    g.stride[i] = q.stride[i];
    g.dilation[i] = q.dilation[i];
  }
  g.align_x = std::min<int64_t>(k.align_in, 16);
  g.align_w = std::min<int64_t>(k.align_weight, 16);
  g.align_y = std::min<int64_t>(k.align_out, 16);
  g.exact_float = q.dtype == DType::Float32 && !k.tf32;
  std::vector<GraphPlan> candidates = graph_conv_plans(a, h, g, kMaxWorkspace, 8);
  // PTERUN_CUDNN_LOG=1: each problem's timings on stderr.
  static const bool log = std::getenv("PTERUN_CUDNN_LOG") != nullptr;
  if (candidates.empty()) {
    if (log) std::fprintf(stderr, "pterun cuDNN conv: no graph plan\n");
    return;
  }
  size_t most = plan.workspace;
  for (const GraphPlan& c : candidates) most = std::max(most, c.workspace);
  void* workspace = most > 0 ? scratch(ctx, most) : nullptr;
  float best = time_runs(stream(ctx), [&] { return run_plan(a, h, plan, q, workspace); });
  if (log) {
    std::fprintf(
        stderr,
        "pterun cuDNN conv %ldx%ldx%ldx%ld -> %ld, %ldx%ld, dtype %d: legacy algo %d %.1f us;",
        static_cast<long>(q.n), static_cast<long>(q.ic), static_cast<long>(q.ih),
        static_cast<long>(q.iw), static_cast<long>(q.oc), static_cast<long>(q.kh),
        static_cast<long>(q.kw), static_cast<int>(q.dtype), plan.algo, best * 1e3);
  }
  size_t chosen = candidates.size();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const float t = time_runs(stream(ctx), [&] {
      return graph_conv_run(a, h, candidates[i], q.in, q.weight, q.out, workspace);
    });
    if (log) std::fprintf(stderr, " graph %zu %.1f us;", i, t * 1e3);
    if (t < best) {
      best = t;
      chosen = i;
    }
  }
  if (log) std::fprintf(stderr, " kept %s\n", chosen < candidates.size() ? "graph" : "legacy");
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i != chosen) graph_conv_release(a, candidates[i]);
  }
  if (chosen < candidates.size()) {
    plan.graph = candidates[chosen];
    plan.workspace = plan.graph.workspace;
  }
}

/// Describes the problem to cuDNN and asks for its algorithm. A status
/// other than success marks the plan unusable instead of throwing: cuDNN
/// declines layouts and sizes it has no kernel for, and pterun's own
/// kernels take those.
void make_plan(kernels::KernelContext& ctx, const cudnn::Api& a, cudnn::Handle h,
               const ops::ConvProblem& q, const Key& k, bool search, Plan& plan) {
  const int type = data_type(q.dtype);
  const int64_t icg = q.ic / q.groups;
  int64_t xs[4], ys[4];
  const int64_t xsz[4] = {q.n, q.ic, q.ih, q.iw}, ysz[4] = {q.n, q.oc, q.oh, q.ow};
  strides_for(xsz, q.in_strides, xs);
  strides_for(ysz, q.out_strides, ys);
  for (int i = 0; i < 4; ++i) {
    if (!fits(xs[i]) || !fits(ys[i])) return;
  }
  auto ok = [](cudnn::Status s) { return s == 0; };
  if (!ok(a.create_tensor(&plan.x)) || !ok(a.create_tensor(&plan.y)) ||
      !ok(a.create_filter(&plan.w)) || !ok(a.create_conv(&plan.conv))) {
    return;
  }
  auto i = [](int64_t v) { return static_cast<int>(v); };
  if (!ok(a.set_tensor_4d_ex(plan.x, type, i(q.n), i(q.ic), i(q.ih), i(q.iw), i(xs[0]), i(xs[1]),
                             i(xs[2]), i(xs[3]))) ||
      !ok(a.set_tensor_4d_ex(plan.y, type, i(q.n), i(q.oc), i(q.oh), i(q.ow), i(ys[0]), i(ys[1]),
                             i(ys[2]), i(ys[3]))) ||
      !ok(a.set_filter_4d(plan.w, type, k.filter_format, i(q.oc), i(icg), i(q.kh), i(q.kw))) ||
      !ok(a.set_conv_2d(plan.conv, i(q.pad[0]), i(q.pad[1]), i(q.stride[0]), i(q.stride[1]),
                        i(q.dilation[0]), i(q.dilation[1]), cudnn::kCrossCorrelation,
                        cudnn::kFloat)) ||
      !ok(a.set_group_count(plan.conv, i(q.groups)))) {
    return;
  }
  // Float32 without TF32: CUDA cores only (cuDNN's default math would let
  // it round the inputs to TF32). Else tensor cores where they apply.
  const int math = q.dtype == DType::Float32 && !k.tf32 ? cudnn::kFmaMath : cudnn::kTensorOpMath;
  if (!ok(a.set_math_type(plan.conv, math))) return;
  if (q.bias != nullptr) {
    if (!ok(a.create_tensor(&plan.bias)) ||
        !ok(a.set_tensor_4d_ex(plan.bias, type, 1, i(q.oc), 1, 1, i(q.oc), 1, 1, 1))) {
      return;
    }
  }
  cudnn::FwdAlgoPerf results[8] = {};
  int returned = 0;
  if (!ok(a.forward_algorithms(h, plan.x, plan.w, plan.conv, plan.y, 8, &returned, results))) {
    return;
  }
  returned = std::min(returned, 8);
  // Without TF32 the descriptor keeps FMA math: cuDNN reports plain
  // algorithms as default math, which would let float32 round to TF32.
  auto allowed = [&](const cudnn::FwdAlgoPerf& p) {
    const bool tensor_ops = p.math_type != cudnn::kDefaultMath && p.math_type != cudnn::kFmaMath;
    return p.status == 0 && p.memory <= kMaxWorkspace && !(math == cudnn::kFmaMath && tensor_ops);
  };
  const cudnn::FwdAlgoPerf* chosen = nullptr;
  size_t search_workspace = 0;
  for (int r = 0; r < returned; ++r) {
    if (!allowed(results[r])) continue;
    if (chosen == nullptr) chosen = &results[r];
    search_workspace = std::max(search_workspace, results[r].memory);
  }
  if (chosen == nullptr) return;
  cudnn::FwdAlgoPerf picked = *chosen;
  // The heuristic's first choice is often not the fastest (bfloat16 3x3
  // convolutions ran at 61-65% of torch's with it): where the stream is not
  // being captured, time the algorithms on this call's tensors, with as
  // much workspace as the heuristic's candidates want, and keep the
  // fastest. The output is written by the runs and then by the real call.
  if (search) {
    cudnn::FwdAlgoPerf timed[8] = {};
    int found = 0;
    void* workspace = search_workspace > 0 ? scratch(ctx, search_workspace) : nullptr;
    if (ok(a.find_algorithms(h, plan.x, q.in, plan.w, q.weight, plan.conv, plan.y, q.out, 8, &found,
                             timed, workspace, search_workspace))) {
      for (int r = 0; r < std::min(found, 8); ++r) {
        if (allowed(timed[r]) && timed[r].memory <= search_workspace) {
          picked = timed[r];
          break;
        }
      }
    }
  }
  if (math != cudnn::kFmaMath && !ok(a.set_math_type(plan.conv, picked.math_type))) return;
  plan.algo = picked.algo;
  plan.workspace = picked.memory;
  plan.usable = true;
  if (search) try_graph(ctx, a, h, q, k, plan);
}

/// Whether plans may time cuDNN's algorithms: not while the stream is being
/// captured into a CUDA graph (a search synchronises), nor with
/// PTERUN_CUDNN_SEARCH=0 (the heuristic's first choice, for comparisons).
bool searching(kernels::KernelContext& ctx) {
  static const bool allowed = [] {
    const char* env = std::getenv("PTERUN_CUDNN_SEARCH");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  if (!allowed) return false;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream(ctx), &capture) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return capture == cudaStreamCaptureStatusNone;
}

/// Destroys the descriptors of a plan cuDNN declined.
void release(const cudnn::Api& a, Plan& plan) {
  graph_conv_release(a, plan.graph);
  if (plan.x != nullptr) a.destroy_tensor(plan.x);
  if (plan.y != nullptr) a.destroy_tensor(plan.y);
  if (plan.bias != nullptr) a.destroy_tensor(plan.bias);
  if (plan.w != nullptr) a.destroy_filter(plan.w);
  if (plan.conv != nullptr) a.destroy_conv(plan.conv);
  plan = Plan{};
}

}  // namespace

bool cudnn_conv(kernels::KernelContext& ctx, const ops::ConvProblem& q, const char* op) {
  const bool dtype =
      q.dtype == DType::Float32 || q.dtype == DType::Float16 || q.dtype == DType::BFloat16;
  if (!dtype || q.transposed || q.ic == 0 || q.residual != nullptr ||
      q.activation != ops::ConvActivation::None || q.groups < 1) {
    return false;
  }
  for (int64_t v : {q.n, q.ic, q.oc, q.ih, q.iw, q.oh, q.ow, q.kh, q.kw, q.groups, q.stride[0],
                    q.stride[1], q.pad[0], q.pad[1], q.dilation[0], q.dilation[1]}) {
    if (!fits(v)) return false;
  }
  const cudnn::Api* a = cudnn::api();
  if (a == nullptr) return false;

  const int64_t icg = q.ic / q.groups;
  const int64_t wsz[4] = {q.oc, icg, q.kh, q.kw};
  static constexpr int kTorchOrder[4] = {0, 1, 2, 3}, kChannelsLast[4] = {0, 2, 3, 1};
  const bool nchw = dense_in(wsz, q.w_strides, kTorchOrder);
  const bool nhwc = dense_in(wsz, q.w_strides, kChannelsLast);
  if (!nchw && !nhwc) return false;
  // A weight that is both (1 x 1, or one channel) goes the way the input does.
  const bool in_channels_last = q.in_strides[1] == 1 && q.ic > 1;
  const int format = nhwc && (!nchw || in_channels_last) ? cudnn::kNhwc : cudnn::kNchw;

  Key key;
  std::memset(&key, 0, sizeof key);
  key.device = device(ctx);
  key.dtype = static_cast<int>(q.dtype);
  key.tf32 = ctx.allow_tf32 ? 1 : 0;
  key.filter_format = format;
  key.groups = q.groups;
  key.n = q.n;
  key.ic = q.ic;
  key.oc = q.oc;
  key.ih = q.ih;
  key.iw = q.iw;
  key.oh = q.oh;
  key.ow = q.ow;
  key.kh = q.kh;
  key.kw = q.kw;
  for (int i = 0; i < 2; ++i) {
    key.stride[i] = q.stride[i];
    key.pad[i] = q.pad[i];
    key.dilation[i] = q.dilation[i];
  }
  for (int i = 0; i < 4; ++i) {
    key.in_strides[i] = q.in_strides[i];
    key.out_strides[i] = q.out_strides[i];
  }
  key.align_in = address_alignment(q.in);
  key.align_weight = address_alignment(q.weight);
  key.align_out = address_alignment(q.out);
  key.has_bias = q.bias != nullptr ? 1 : 0;

  cudnn::Handle h = cudnn::handle(ctx);
  if (h == nullptr) return false;
  // Plans live for the process (their descriptors are small host objects),
  // so the map is never destroyed.
  static std::mutex mutex;
  static auto* plans = new std::unordered_map<Key, Plan, BytesHash<Key>, BytesEqual<Key>>();
  Plan plan;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = plans->find(key);
    if (it == plans->end()) {
      Plan made;
      make_plan(ctx, *a, h, q, key, searching(ctx), made);
      if (!made.usable) release(*a, made);
      it = plans->emplace(key, made).first;
    }
    plan = it->second;
  }
  if (!plan.usable) return false;

  void* workspace = plan.workspace > 0 ? scratch(ctx, plan.workspace) : nullptr;
  cudnn::check(*a, run_plan(*a, h, plan, q, workspace), op);
  if (q.bias != nullptr) {
    const float one = 1.0f;
    cudnn::check(*a, a->add_tensor(h, &one, plan.bias, q.bias, &one, plan.y, q.out), op);
  }
  return true;
}

}  // namespace pterun::cuda::nn
