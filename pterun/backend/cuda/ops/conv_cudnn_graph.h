#pragma once

// A forward convolution through cuDNN's graph (backend) API
// (conv_cudnn_graph.cpp): the engines torch's convolutions run, which the
// legacy cudnnConvolutionForward algorithms do not all reach (bfloat16
// tensor-core kernels among them). conv_cudnn.cpp times these plans
// against its legacy algorithm and keeps the faster.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "pterun/backend/cuda/cudnn_api.h"

namespace pterun::cuda::nn {

/// The problem in the graph API's terms: dims in (N, C, H, W) order with
/// each tensor's strides (a dim of size 1 given the span of the others).
struct GraphConvShape {
  int data_type;  // cudnn::DataType
  int64_t x_dims[4], x_strides[4];
  int64_t w_dims[4], w_strides[4];
  int64_t y_dims[4], y_strides[4];
  int64_t pad[2], stride[2], dilation[2];
  int64_t align_x, align_w, align_y;  // bytes, powers of two
  bool exact_float;                   // float32 without TF32: no tensor-core engines
};

/// An execution plan and the workspace it needs; `keep` holds the
/// descriptors it was made from (graph, tensors, engine configuration).
struct GraphPlan {
  cudnn::BackendDesc plan = nullptr;
  size_t workspace = 0;
  std::shared_ptr<void> keep;
};

/// The plans of the heuristic's engine configurations that cuDNN builds for
/// `shape`, best ranked first, at most `most`, none needing more than
/// max_workspace and none rounding float32 inputs (or, exact_float, using
/// tensor cores). Empty where the library has no graph API or no engine.
std::vector<GraphPlan> graph_conv_plans(const cudnn::Api& a, cudnn::Handle h,
                                        const GraphConvShape& shape, size_t max_workspace,
                                        int most);

/// Enqueues `plan` on h's stream: y = conv(x, w).
cudnn::Status graph_conv_run(const cudnn::Api& a, cudnn::Handle h, const GraphPlan& plan,
                             const void* x, const void* w, void* y, void* workspace);

/// Destroys the plan's descriptor (and, with the last plan of a problem,
/// what it was made from).
void graph_conv_release(const cudnn::Api& a, GraphPlan& plan);

}  // namespace pterun::cuda::nn
