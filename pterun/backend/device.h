#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "pterun/kernels/kernel.h"

namespace pterun::backend {

/// Bytes owned on one GPU (cudaMalloc'd; freed by the destructor, with the
/// device made current). Move-only; a single owner. In a build without CUDA
/// it can only be empty.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `bytes` on GPU `device` and counts it in
  /// stats::DeviceAllocs. Error MemoryAllocationFailed (with the size and
  /// the device) when the GPU has no room, InvalidState when CUDA is
  /// unavailable.
  DeviceBuffer(int device, size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  int device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  int device_ = -1;
};

/// Host memory pinned for DMA (cudaHostAlloc, portable across GPUs), for
/// staging uploads that cannot come straight from the caller's memory.
/// Move-only. In a build without CUDA it can only be empty.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  /// Error MemoryAllocationFailed, or InvalidState without CUDA.
  explicit PinnedBuffer(size_t bytes);
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();

  uint8_t* data() const { return static_cast<uint8_t*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

/// Error InvalidState saying why when there is no usable GPU (no CUDA in
/// this build, no driver, no device), InvalidArgument when `device` is not
/// an existing GPU's index.
void require_cuda_device(int device);

/// The CUDA backend's per-method state for `context` on GPU `device`: a
/// stream of its own, a cuBLAS handle bound to it, and a stream-ordered
/// scratch pool. Stored in KernelContext::backend. Error InvalidState when
/// CUDA is unavailable (the message says why).
std::shared_ptr<void> make_cuda_method_state(int device);

/// Makes the GPU of `context` (a CUDA method's context) current in the
/// calling thread: kernel launches and cuBLAS calls go to the current
/// device, so a method does this before it runs its steps.
void activate(const kernels::KernelContext& context);

/// Copies between host and the GPU of `context` (a CUDA method's context),
/// in stream order. Counted in stats (HostToDeviceCopies, ...).
void copy_host_to_device(const kernels::KernelContext& context, void* dst, const void* src,
                         size_t bytes);
void copy_device_to_host(const kernels::KernelContext& context, void* dst, const void* src,
                         size_t bytes);
void copy_device_to_device(const kernels::KernelContext& context, void* dst, const void* src,
                           size_t bytes);

/// Copies a `sizes`-shaped array between two layouts (strides in elements)
/// on the GPU of `context`, in stream order: the layout conversion of a
/// device input (docs/python-api.md, B1) without a trip through the host. Counted as a
/// device-to-device copy.
void reorder_on_device(const kernels::KernelContext& context, void* dst,
                       std::span<const int64_t> dst_strides, const void* src,
                       std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                       size_t element_size);

/// Copies `bytes` from GPU `src_device` into the context's GPU, in stream
/// order (cudaMemcpyPeerAsync; counted as a device-to-device copy).
void copy_peer_to_device(const kernels::KernelContext& context, void* dst, int src_device,
                         const void* src, size_t bytes);

/// Copies outside any method's stream, finished when they return, with GPU
/// `device` current: load-time uploads of constants and state, zeroing of
/// fresh device memory, and downloads for callers that need host bytes now
/// (a CPU method given a CUDA tensor, printing). Work queued on methods'
/// streams is not waited for. download() counts one device sync.
void upload(int device, void* dst, const void* src, size_t bytes);
void download(int device, void* dst, const void* src, size_t bytes);
void zero(int device, void* dst, size_t bytes);

/// Waits for all work queued on the context's stream (counted in
/// stats::DeviceSyncs). Errors from kernels that ran asynchronously surface
/// here, as Error with code Internal naming the CUDA error.
void synchronize(const kernels::KernelContext& context);

// Host waits for the Python layer (B19) and the kernel test hooks.

/// Waits until all work queued on GPU `device`, on any stream, is done
/// (for memory another library may use on streams pterun does not know).
/// Counted in DeviceSyncs.
void synchronize_device(int device);

/// Waits for the work queued so far on `stream` of GPU `device` (a
/// cudaStream_t as an integer, DLPack's numbering: 1 is the legacy default
/// stream, before which a DLPack producer given `stream=1` orders its
/// pending writes). Counted in DeviceSyncs.
void synchronize_stream(int device, uintptr_t stream);

/// Makes the stream of `context` (a CUDA method's context) wait, on the
/// GPU and without a host wait, for the work queued so far on `stream` of
/// the same GPU (numbered as for synchronize_stream): an input's producer
/// (B19). Nothing when `stream` is the method's own.
void order_after_stream(const kernels::KernelContext& context, uintptr_t stream);

// CUDA graphs: a method's steps captured once and replayed.

/// An instantiated CUDA graph (cudaGraphExec_t), destroyed with its last
/// owner; null when there is none.
using GraphExec = std::shared_ptr<void>;

/// Starts capturing the work the calling thread queues on the stream of
/// `context` (a CUDA method's context) into a graph, instead of running it.
void begin_capture(const kernels::KernelContext& context);

/// Ends the capture that begin_capture started and instantiates the graph.
/// Null when the capture failed (a call that cannot be captured was made
/// during it: a host wait, an allocation), with CUDA's error state cleared
/// so that the work can be run again without a graph. Never throws.
GraphExec end_capture(const kernels::KernelContext& context) noexcept;

/// Queues one replay of `graph` on the stream of `context`.
void launch_graph(const kernels::KernelContext& context, const GraphExec& graph);

/// A number that changes whenever the device scratch of `context` (a CUDA
/// method's context) moves to new memory: graphs captured before hold the
/// old addresses and must not be replayed.
uint64_t scratch_epoch(const kernels::KernelContext& context);

/// Seconds of GPU time taken by the work `launch` queues on the stream of
/// `context` (a CUDA method's context), measured with two events; waits for
/// the second one (counted in DeviceSyncs).
double time_on_stream(const kernels::KernelContext& context, const std::function<void()>& launch);

}  // namespace pterun::backend
