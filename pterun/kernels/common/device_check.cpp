#include "pterun/kernels/common/device_check.h"

#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"
#include "pterun/kernels/internal_ops.h"

namespace pterun::kernels {

const char* device_check_op_name(DeviceCheckOp op) {
  switch (op) {
    case DeviceCheckOp::UpdateCache: return "llama::update_cache.out";
    case DeviceCheckOp::UpdateCacheWithIndices: return "llama::update_cache_with_indices.out";
    case DeviceCheckOp::CustomSdpa: return "llama::custom_sdpa.out";
    case DeviceCheckOp::SdpaWithKvCache: return "llama::sdpa_with_kv_cache.out";
    case DeviceCheckOp::EmbeddingByte: return "quantized_decomposed::embedding_byte";
    case DeviceCheckOp::Embedding2Bit: return "quantized_decomposed::embedding_2bit";
    case DeviceCheckOp::Embedding4Bit: return "quantized_decomposed::embedding_4bit";
    case DeviceCheckOp::Slice: return "aten::slice_copy.Tensor_out";
    case DeviceCheckOp::FullyConnectedDq: return "xnnpack::fully_connected_dq";
    case DeviceCheckOp::Attention: return kAttentionKernel;
  }
  return "a kernel";
}

std::string device_check_message(const DeviceCheck& c) {
  const char* op = device_check_op_name(static_cast<DeviceCheckOp>(c.op));
  switch (static_cast<DeviceCheckKind>(c.kind)) {
    case DeviceCheckKind::CachePositions:
      if (c.value < 0) return str_cat(op, ": start_pos ", c.value, " is negative");
      return str_cat(op, ": start_pos ", c.value, " with ", c.extra,
                     " tokens runs past the cache of ", c.limit, " positions");
    case DeviceCheckKind::CacheIndex:
      return str_cat(op, ": cache index ", c.value, " is out of range [0, ", c.limit, ")");
    case DeviceCheckKind::EmbeddingRow:
      return str_cat(op, ": index ", c.value, " is out of range for ", c.limit, " rows");
    case DeviceCheckKind::SliceStart:
      if (c.value < 0) return str_cat(op, ": start ", c.value, " is negative");
      return str_cat(op, ": start ", c.value, " with ", c.extra,
                     " elements runs past a dimension of ", c.limit);
    case DeviceCheckKind::NonFiniteSlice:
      return str_cat(op, ": input slice ", c.value, " of ", c.limit,
                     " holds NaN or an infinity, which cannot be quantized");
    case DeviceCheckKind::None: break;
  }
  return str_cat(op, ": a device-side check failed");
}

void throw_device_check(const DeviceCheck& check) {
  const bool value_error = check.kind == static_cast<int32_t>(DeviceCheckKind::NonFiniteSlice);
  throw_error(value_error ? ErrorCode::InvalidArgument : ErrorCode::IndexOutOfRange,
              device_check_message(check));
}

void throw_device_check(DeviceCheckKind kind, DeviceCheckOp op, int64_t value, int64_t limit,
                        int64_t extra) {
  DeviceCheck c{1, static_cast<int32_t>(kind), static_cast<int32_t>(op), 0, value, limit, extra};
  throw_device_check(c);
}

}  // namespace pterun::kernels
