#pragma once

// Checks of data that a kernel can make only where the data is: a position
// or index read on a GPU. The kernel that finds a bad value records it in a
// DeviceCheck word (the first failure wins) and writes nothing it should
// not; the host reads the word after its wait and raises. The CPU kernels
// raise the same messages directly (device_check_message), so both devices
// refuse the same inputs with the same words.

#include <cstdint>
#include <string>

namespace pterun::kernels {

/// What a failed device check was about (how the message reads).
enum class DeviceCheckKind : int32_t {
  None = 0,
  /// Tokens [value, value + extra) do not fit a cache of `limit` positions.
  CachePositions = 1,
  /// A per-token cache index `value` outside [0, limit).
  CacheIndex = 2,
  /// An embedding row `value` outside [0, limit).
  EmbeddingRow = 3,
  /// A slice of `extra` elements starting at `value` does not fit a
  /// dimension of `limit`.
  SliceStart = 4,
  /// Slice `value` of `limit` slices of the input holds NaN or an infinity
  /// (nothing can quantize it): InvalidArgument, not IndexOutOfRange.
  NonFiniteSlice = 5,
};

/// Operators a device check can name.
enum class DeviceCheckOp : int32_t {
  UpdateCache = 0,
  UpdateCacheWithIndices = 1,
  CustomSdpa = 2,
  SdpaWithKvCache = 3,
  EmbeddingByte = 4,
  Embedding2Bit = 5,
  Embedding4Bit = 6,
  Slice = 7,
  FullyConnectedDq = 8,
  Attention = 9,  // pterun::attention.out (names it in the backends' messages)
};

/// The word a GPU kernel fills when a check fails. `failed` goes from 0 to
/// 1 once (atomic compare-and-swap); the other fields belong to that first
/// failure.
struct DeviceCheck {
  int32_t failed;
  int32_t kind;  // DeviceCheckKind
  int32_t op;    // DeviceCheckOp
  int32_t pad;
  int64_t value;
  int64_t limit;
  int64_t extra;
};

/// "llama::update_cache.out" ...
const char* device_check_op_name(DeviceCheckOp op);

/// The message of a failed check, starting with the operator's name.
std::string device_check_message(const DeviceCheck& check);

/// Throws the check's Error with device_check_message: IndexOutOfRange, or
/// InvalidArgument for a NonFiniteSlice.
[[noreturn]] void throw_device_check(const DeviceCheck& check);

/// Throws the error of a check that failed on the host: the CPU's way of
/// saying exactly what the GPU's word says.
[[noreturn]] void throw_device_check(DeviceCheckKind kind, DeviceCheckOp op, int64_t value,
                                     int64_t limit, int64_t extra = 0);

}  // namespace pterun::kernels
