#pragma once

// torch tensors read straight from their attributes: torch's __dlpack__
// costs 20-30 us per tensor, which would dominate a GPU call. Conjugate and
// negative views are read as the values they stand for (torch's DLPack
// export refuses the first and ignores the second). Everything else
// (autograd, sparse or nested layouts, subclasses, devices pterun does not
// read) goes through DLPack, which gives torch's own errors.

#include <nanobind/nanobind.h>

#include <cstdint>
#include <span>

#include "pterun/core/dtype.h"
#include "python/src/input_batch.h"

namespace pterun::python {

/// A torch tensor's memory as torch describes it (valid while the tensor
/// lives). Sizes and strides (in elements) live in the batch.
struct TorchTensorView {
  nanobind::object owner;  // the tensor whose memory is read (the input, or its resolved copy)
  const void* data = nullptr;
  DType dtype = DType::Float32;
  std::span<const int64_t> sizes;
  std::span<const int64_t> strides;
  int cuda_index = -1;   // -1: host memory
  uintptr_t stream = 0;  // CUDA: torch's current stream on that GPU (its writes are queued there)
};

/// Reads `obj` when it is exactly a torch.Tensor (torch already imported;
/// pterun never imports it) that is strided, on the CPU or a CUDA GPU, not
/// requiring grad, with a dtype pterun has; a conjugate or negative view is
/// first resolved by torch into a tensor of its own. False otherwise, with
/// no Python error set.
bool read_torch_tensor(nanobind::handle obj, InputBatch& batch, TorchTensorView& out);

}  // namespace pterun::python
