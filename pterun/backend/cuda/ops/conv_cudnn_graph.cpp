// graph_conv_plans (conv_cudnn_graph.h): the operation graph of one forward
// convolution (tensors x, w, y with unique ids 1, 2, 3), the instant
// heuristic's engine configurations, and an execution plan for each that
// cuDNN finalizes and pterun allows. The descriptors the plans were made
// from live as long as any of them; a failing status anywhere only drops
// that candidate (or, before the heuristic, all of them).

#include "pterun/backend/cuda/ops/conv_cudnn_graph.h"

#include <algorithm>
#include <memory>

namespace pterun::cuda::nn {
namespace {

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

/// Descriptors destroyed with their owner.
class Descriptors {
 public:
  explicit Descriptors(const cudnn::Api& a) : a_(a) {}
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    for (cudnn::BackendDesc d : owned_) a_.destroy_backend(d);
  }
  /// A new descriptor of `type`, or null.
  cudnn::BackendDesc make(int type) {
    cudnn::BackendDesc d = nullptr;
    if (a_.create_backend(type, &d) != 0) return nullptr;
    owned_.push_back(d);
    return d;
  }

 private:
  const cudnn::Api& a_;
  std::vector<cudnn::BackendDesc> owned_;
};

struct Setter {
  const cudnn::Api& a;
  bool ok = true;
  void operator()(cudnn::BackendDesc d, int name, int type, int64_t count, const void* values) {
    ok = ok && d != nullptr && a.set_attribute(d, name, type, count, values) == 0;
  }
  void finalize(cudnn::BackendDesc d) { ok = ok && d != nullptr && a.finalize(d) == 0; }
};

cudnn::BackendDesc tensor(Descriptors& owned, Setter& set, int type, const int64_t dims[4],
                          const int64_t strides[4], int64_t uid, int64_t alignment) {
  cudnn::BackendDesc t = owned.make(cudnn::kTensorDesc);
  set(t, cudnn::kTensorDataType, cudnn::kTypeDataType, 1, &type);
  set(t, cudnn::kTensorDims, cudnn::kTypeInt64, 4, dims);
  set(t, cudnn::kTensorStrides, cudnn::kTypeInt64, 4, strides);
  set(t, cudnn::kTensorUid, cudnn::kTypeInt64, 1, &uid);
  set(t, cudnn::kTensorAlignment, cudnn::kTypeInt64, 1, &alignment);
  set.finalize(t);
  return t;
}

/// Whether the engine behind `config` may run: no inputs rounded to a
/// narrower type, and no tensor cores for exact float32.
bool allowed(const cudnn::Api& a, cudnn::BackendDesc config, bool exact_float) {
  Descriptors owned(a);
  cudnn::BackendDesc engine = owned.make(cudnn::kEngineDesc);
  if (engine == nullptr) return false;
  int64_t count = 0;
  if (a.get_attribute(config, cudnn::kEngineConfigEngine, cudnn::kTypeDescriptor, 1, &count,
                      &engine) != 0 ||
      count != 1) {
    return false;
  }
  int notes[32] = {};
  int64_t n = 0;
  if (a.get_attribute(engine, cudnn::kEngineNumericalNote, cudnn::kTypeNumericalNote, 32, &n,
                      notes) != 0) {
    return false;
  }
  for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) {
    if (notes[i] == cudnn::kNoteDownConvertInputs) return false;
    if (exact_float && notes[i] == cudnn::kNoteTensorCore) return false;
  }
  return true;
}

}  // namespace

std::vector<GraphPlan> graph_conv_plans(const cudnn::Api& a, cudnn::Handle h,
                                        const GraphConvShape& s, size_t max_workspace, int most) {
  std::vector<GraphPlan> plans;
  if (a.create_backend == nullptr) return plans;
  // Kept with the plans: cuDNN's plans refer to their configuration and
  // graph.
  auto kept = std::make_shared<Descriptors>(a);
  Descriptors& owned = *kept;
  Setter set{a};
  cudnn::BackendDesc x = tensor(owned, set, s.data_type, s.x_dims, s.x_strides, kUidX, s.align_x);
  cudnn::BackendDesc w = tensor(owned, set, s.data_type, s.w_dims, s.w_strides, kUidW, s.align_w);
  cudnn::BackendDesc y = tensor(owned, set, s.data_type, s.y_dims, s.y_strides, kUidY, s.align_y);

  cudnn::BackendDesc conv = owned.make(cudnn::kConvolutionDesc);
  const int compute = cudnn::kFloat, mode = cudnn::kCrossCorrelation;
  const int64_t dims = 2;
  set(conv, cudnn::kConvCompType, cudnn::kTypeDataType, 1, &compute);
  set(conv, cudnn::kConvMode, cudnn::kTypeConvMode, 1, &mode);
  set(conv, cudnn::kConvSpatialDims, cudnn::kTypeInt64, 1, &dims);
  set(conv, cudnn::kConvPrePaddings, cudnn::kTypeInt64, 2, s.pad);
  set(conv, cudnn::kConvPostPaddings, cudnn::kTypeInt64, 2, s.pad);
  set(conv, cudnn::kConvFilterStrides, cudnn::kTypeInt64, 2, s.stride);
  set(conv, cudnn::kConvDilations, cudnn::kTypeInt64, 2, s.dilation);
  set.finalize(conv);

  cudnn::BackendDesc op = owned.make(cudnn::kConvForwardOpDesc);
  const float alpha = 1.0f, beta = 0.0f;
  set(op, cudnn::kConvForwardX, cudnn::kTypeDescriptor, 1, &x);
  set(op, cudnn::kConvForwardW, cudnn::kTypeDescriptor, 1, &w);
  set(op, cudnn::kConvForwardY, cudnn::kTypeDescriptor, 1, &y);
  set(op, cudnn::kConvForwardConv, cudnn::kTypeDescriptor, 1, &conv);
  set(op, cudnn::kConvForwardAlpha, cudnn::kTypeFloat, 1, &alpha);
  set(op, cudnn::kConvForwardBeta, cudnn::kTypeFloat, 1, &beta);
  set.finalize(op);

  cudnn::BackendDesc graph = owned.make(cudnn::kOperationGraphDesc);
  set(graph, cudnn::kGraphOps, cudnn::kTypeDescriptor, 1, &op);
  set(graph, cudnn::kGraphHandle, cudnn::kTypeHandle, 1, &h);
  set.finalize(graph);

  cudnn::BackendDesc heuristics = owned.make(cudnn::kEngineHeuristicsDesc);
  const int heuristic = cudnn::kHeuristicsInstant;
  set(heuristics, cudnn::kHeuristicsGraph, cudnn::kTypeDescriptor, 1, &graph);
  set(heuristics, cudnn::kHeuristicsMode, cudnn::kTypeHeuristicsMode, 1, &heuristic);
  set.finalize(heuristics);
  if (!set.ok) return plans;

  // The results are read into configurations made beforehand.
  int64_t count = 0;
  if (a.get_attribute(heuristics, cudnn::kHeuristicsResults, cudnn::kTypeDescriptor, 0, &count,
                      nullptr) != 0 ||
      count <= 0) {
    return plans;
  }
  count = std::min<int64_t>(count, 64);
  std::vector<cudnn::BackendDesc> configs;
  for (int64_t i = 0; i < count; ++i) {
    cudnn::BackendDesc c = owned.make(cudnn::kEngineConfigDesc);
    if (c == nullptr) return plans;
    configs.push_back(c);
  }
  int64_t returned = 0;
  if (a.get_attribute(heuristics, cudnn::kHeuristicsResults, cudnn::kTypeDescriptor, count,
                      &returned, configs.data()) != 0) {
    return plans;
  }
  for (int64_t i = 0; i < std::min(returned, count) && static_cast<int>(plans.size()) < most; ++i) {
    if (!allowed(a, configs[i], s.exact_float)) continue;
    GraphPlan p;
    if (a.create_backend(cudnn::kExecutionPlanDesc, &p.plan) != 0) continue;
    int64_t workspace = 0, n = 0;
    const bool built =
        a.set_attribute(p.plan, cudnn::kPlanHandle, cudnn::kTypeHandle, 1, &h) == 0 &&
        a.set_attribute(p.plan, cudnn::kPlanEngineConfig, cudnn::kTypeDescriptor, 1, &configs[i]) ==
            0 &&
        a.finalize(p.plan) == 0 &&
        a.get_attribute(p.plan, cudnn::kPlanWorkspaceSize, cudnn::kTypeInt64, 1, &n, &workspace) ==
            0 &&
        workspace >= 0 && static_cast<size_t>(workspace) <= max_workspace;
    if (!built) {
      a.destroy_backend(p.plan);
      continue;
    }
    p.workspace = static_cast<size_t>(workspace);
    p.keep = kept;
    plans.push_back(p);
  }
  return plans;
}

cudnn::Status graph_conv_run(const cudnn::Api& a, cudnn::Handle h, const GraphPlan& plan,
                             const void* x, const void* w, void* y, void* workspace) {
  // A variant pack holds this call's addresses; it is not kept (the
  // launch has read it once cudnnBackendExecute returns).
  cudnn::BackendDesc pack = nullptr;
  cudnn::Status status = a.create_backend(cudnn::kVariantPackDesc, &pack);
  if (status != 0) return status;
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* pointers[3] = {const_cast<void*>(x), const_cast<void*>(w), y};
  status = a.set_attribute(pack, cudnn::kPackUids, cudnn::kTypeInt64, 3, uids);
  if (status == 0)
    status = a.set_attribute(pack, cudnn::kPackPointers, cudnn::kTypeVoidPtr, 3, pointers);
  if (status == 0)
    status = a.set_attribute(pack, cudnn::kPackWorkspace, cudnn::kTypeVoidPtr, 1, &workspace);
  if (status == 0) status = a.finalize(pack);
  if (status == 0) status = a.execute(h, plan.plan, pack);
  a.destroy_backend(pack);
  return status;
}

void graph_conv_release(const cudnn::Api& a, GraphPlan& plan) {
  if (plan.plan != nullptr) a.destroy_backend(plan.plan);
  plan = GraphPlan{};  // the last plan of a problem destroys what `keep` held
}

}  // namespace pterun::cuda::nn
