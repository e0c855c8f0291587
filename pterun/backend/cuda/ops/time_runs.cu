// hold_stream (time_runs.h): a one-thread kernel that keeps a stream busy
// for a while, so that the launches timed after it queue up behind it and
// the device then runs them back to back.

#include "pterun/backend/cuda/ops/time_runs.h"

namespace pterun::cuda {
namespace {

__global__ void hold_kernel(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

}  // namespace

bool hold_stream(cudaStream_t stream, unsigned long long nanoseconds) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return false;
  }
  hold_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  if (cudaGetLastError() != cudaSuccess) return false;
  return true;
}

}  // namespace pterun::cuda
