#pragma once

// Device-side halves of kernels/common/device_check.h for the kernels that
// read positions from tensors: the first failing check of a call is
// recorded in the method's device-check word (raised at the next wait).

#include <cstdint>

#include "pterun/kernels/common/device_check.h"

namespace pterun::kernels::cuda_ops {

/// Records a failed check unless one is recorded already.
__device__ inline void report(DeviceCheck* check, DeviceCheckKind kind, int32_t op, int64_t value,
                              int64_t limit, int64_t extra) {
  if (atomicCAS(reinterpret_cast<int*>(&check->failed), 0, 1) == 0) {
    check->kind = static_cast<int32_t>(kind);
    check->op = op;
    check->value = value;
    check->limit = limit;
    check->extra = extra;
  }
}

/// The single element of an int64 (`is64`) or int32 tensor.
__device__ inline int64_t read_position(const void* p, bool is64) {
  return is64 ? *static_cast<const int64_t*>(p)
              : static_cast<int64_t>(*static_cast<const int32_t*>(p));
}

}  // namespace pterun::kernels::cuda_ops
