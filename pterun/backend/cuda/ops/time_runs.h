#pragma once

// Timing on the stream, for the per-problem choices made on a first call
// (cuDNN's algorithms, pterun's own convolution against cuDNN's).

#include <cuda_runtime_api.h>

#include <limits>

#include "pterun/backend/cuda/event_pair.h"

namespace pterun::cuda {

/// Keeps `stream` busy for about `nanoseconds` (a one-thread kernel;
/// time_runs.cu); false, doing nothing, while the stream is being captured
/// or where the launch fails.
bool hold_stream(cudaStream_t stream, unsigned long long nanoseconds);

/// Milliseconds per run of `run` (returning 0 on success) on `stream`, from
/// three runs after one to warm up; infinity where a run fails. The device
/// time: the timed runs queue up behind a hold of the stream (hold_stream)
/// and run back to back, as they do replayed in a CUDA graph, so a path's
/// host-side launch cost does not count against it.
template <typename Run>
float time_runs(cudaStream_t stream, Run run) {
  constexpr float kFailed = std::numeric_limits<float>::infinity();
  EventPair e;  // a run may throw
  if (e.create() != cudaSuccess) {
    cudaGetLastError();
    return kFailed;
  }
  float ms = kFailed;
  constexpr unsigned long long kHoldNs = 300000;  // well past three launches' host time
  bool ran = run() == 0;
  if (ran) hold_stream(stream, kHoldNs);
  ran = ran && cudaEventRecord(e.start, stream) == cudaSuccess;
  for (int i = 0; i < 3 && ran; ++i) ran = run() == 0;
  if (ran && cudaEventRecord(e.stop, stream) == cudaSuccess &&
      cudaEventSynchronize(e.stop) == cudaSuccess &&
      cudaEventElapsedTime(&ms, e.start, e.stop) == cudaSuccess) {
    ms /= 3;
  } else {
    ms = kFailed;
    cudaGetLastError();
  }
  return ms;
}

}  // namespace pterun::cuda
