#pragma once

// Appends to a method description what a delegate's expansion needs: new
// values (tensors, numbers, lists, each number and list once), operators
// and bytes the expansion owns. Internal to delegates/.

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pterun/format/program_desc.h"

namespace pterun::delegates {

/// Frees what MethodBuilder::own allocates (std::aligned_alloc).
struct FreeBytes {
  void operator()(uint8_t* p) const;
};

/// Bytes made at load (re-laid-out, aligned or copied constants), kept
/// alive with the method description whose tensors point into them.
using OwnedBytes = std::vector<std::unique_ptr<uint8_t[], FreeBytes>>;

class MethodBuilder {
 public:
  MethodBuilder(format::MethodDesc& desc, OwnedBytes& owned) : desc_(desc), owned_(owned) {}

  /// A new tensor value described by `t`.
  int32_t add_tensor(format::TensorDesc t);
  /// A new constant tensor of `dtype` and `sizes` over `bytes` (which must
  /// outlive the description and hold its elements), in `dim_order`
  /// (empty: contiguous).
  int32_t add_constant(DType dtype, std::vector<int64_t> sizes, std::span<const uint8_t> bytes,
                       std::vector<uint8_t> dim_order = {});
  /// The None value (one for the whole method).
  int32_t add_none();
  /// Int, Double and Bool values, each distinct number once.
  int32_t add_int(int64_t v);
  int32_t add_double(double v);
  int32_t add_bool(bool v);
  /// An IntList value over Int values; each distinct list once.
  int32_t add_int_list(std::span<const int64_t> items);
  /// A TensorList value over tensor values `items`.
  int32_t add_tensor_list(std::span<const int32_t> items);
  /// The index of operator `name` (no overload), added on first use.
  int32_t op(std::string_view name);

  /// `size` zeroed bytes that live as long as the description, 64-byte
  /// aligned (whole vectors of a row never straddle a cache line where
  /// rows are multiples of 16 floats). From 64 KiB on, cut from regions of 32 MiB
  /// or more advised to use transparent huge pages where the system has
  /// them: kernels that stream large constants from memory (a decode
  /// step's weights) read 2 MiB pages faster than 4 KiB ones (fewer TLB
  /// misses, hardware prefetches that do not stop every 4 KiB).
  std::span<uint8_t> own(size_t size);

  format::MethodDesc& desc() { return desc_; }

 private:
  int32_t push(format::ValueDesc v);

  format::MethodDesc& desc_;
  OwnedBytes& owned_;
  uint8_t* region_ = nullptr;  // the unused rest of own()'s current large region
  size_t region_left_ = 0;
  std::map<int64_t, int32_t> ints_;
  std::map<uint64_t, int32_t> doubles_;  // by bit pattern: -0.0 and NaNs stay distinct
  int32_t none_ = -1;
  int32_t bools_[2] = {-1, -1};
  std::map<std::vector<int64_t>, int32_t> int_lists_;
  std::map<std::string, int32_t, std::less<>> ops_;
};

}  // namespace pterun::delegates
