// CUDA graphs of a method's steps (backend/device.h): stream capture on the
// method's own stream, instantiation, replay.

#include <cuda_runtime.h>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/cuda_state.h"
#include "pterun/backend/device.h"

namespace pterun::backend {

void begin_capture(const kernels::KernelContext& context) {
  const cuda::MethodState& s = cuda::state(context);
  PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
  // Thread-local: calls that cannot be captured fail when this thread makes
  // them (and end the capture), while other threads' work goes on.
  PTERUN_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
}

GraphExec end_capture(const kernels::KernelContext& context) noexcept {
  const cuda::MethodState& s = cuda::state(context);
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaStreamEndCapture(s.stream, &graph);
  cudaGraphExec_t exec = nullptr;
  if (status == cudaSuccess && graph != nullptr) {
    status = cudaGraphInstantiate(&exec, graph, 0);
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (status != cudaSuccess || exec == nullptr) {
    cudaGetLastError();  // the failed capture left an error behind: clear it
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    return nullptr;
  }
  const int device = s.device;
  return GraphExec(exec, [device](void* e) {
    int current = 0;
    cudaGetDevice(&current);
    cudaSetDevice(device);
    cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(e));
    cudaSetDevice(current);
  });
}

void launch_graph(const kernels::KernelContext& context, const GraphExec& graph) {
  const cuda::MethodState& s = cuda::state(context);
  PTERUN_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph.get()), s.stream));
}

uint64_t scratch_epoch(const kernels::KernelContext& context) {
  return cuda::state(context).scratch_epoch;
}

}  // namespace pterun::backend
