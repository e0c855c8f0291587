#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pterun/core/dtype.h"
#include "pterun/core/value_kind.h"

namespace pterun {

constexpr size_t kMaxRank = 16;

/// A tensor seen by kernels: a data pointer that the runtime owns or points
/// elsewhere, a dtype, sizes, and strides derived from a dim order (the
/// memory order of the logical dimensions, outermost first). Tensors do not
/// own their data.
class Tensor {
 public:
  Tensor() = default;
  /// A tensor with the given sizes and dim order (empty dim order =
  /// contiguous), no data, and capacity 0.
  Tensor(DType dtype, std::span<const int64_t> sizes, std::span<const uint8_t> dim_order = {},
         ShapeDynamism dynamism = ShapeDynamism::Static);

  DType dtype() const { return dtype_; }
  size_t dim() const { return rank_; }
  std::span<const int64_t> sizes() const { return {sizes_.data(), rank_}; }
  int64_t size(size_t d) const { return sizes_[d]; }
  /// Strides in elements.
  std::span<const int64_t> strides() const { return {strides_.data(), rank_}; }
  int64_t stride(size_t d) const { return strides_[d]; }
  std::span<const uint8_t> dim_order() const { return {dim_order_.data(), rank_}; }
  int64_t numel() const { return numel_; }
  size_t element_size() const { return pterun::element_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel_) * element_size(); }
  ShapeDynamism dynamism() const { return dynamism_; }
  /// True when the dim order is 0..rank-1 (row-major).
  bool is_contiguous_order() const;
  /// True when the dim order is channels-last (rank 4 [0,2,3,1] or rank 5
  /// [0,2,3,4,1]).
  bool is_channels_last_order() const;

  void* data() const { return data_; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data_);
  }
  /// Bytes available at data(); a resize may not need more.
  size_t capacity() const { return capacity_; }

  /// Points the tensor at `data` holding `capacity` bytes (no longer a
  /// constant: constant_id() 0).
  void set_data(void* data, size_t capacity) {
    data_ = data;
    capacity_ = capacity;
    constant_id_ = 0;
  }

  /// Nonzero for a method's constant: its bytes never change while the
  /// method lives, and no other tensor holds other bytes at the same
  /// address under the same id (each loaded method draws its own). Kernels
  /// may keep what they derive from such bytes by (address, id) and skip
  /// checking that the bytes are unchanged. 0: bytes that may change.
  uint64_t constant_id() const { return constant_id_; }
  void set_constant_id(uint64_t id) { constant_id_ = id; }

  /// Changes the shape (same rank) and recomputes strides. Error
  /// NotSupported for a static tensor given another shape, InvalidArgument
  /// for a rank change, a negative size, or more bytes than the capacity of
  /// a tensor that has data or a bound.
  void resize(std::span<const int64_t> sizes);

  /// Sets the shape without any check other than rank and sign, for
  /// tensors the runtime owns entirely (views, scratch).
  void reshape_unchecked(std::span<const int64_t> sizes, std::span<const uint8_t> dim_order = {});

  /// Gives the tensor explicit strides (elements, one per dimension): a
  /// view the runtime makes for a kernel that walks strides, over a window
  /// of another tensor's bytes (the queries inside a packed projection,
  /// say). The caller keeps every element inside the bytes at data(); the
  /// dim order stays as it was, and a resize or reshape recomputes dense
  /// strides.
  void set_strides_unchecked(std::span<const int64_t> strides);

  /// Bytes the bound shape needs (set at load; resize keeps nbytes within).
  size_t bound_nbytes() const { return bound_nbytes_; }
  void set_bound_nbytes(size_t n) { bound_nbytes_ = n; }

 private:
  void compute_strides();

  DType dtype_ = DType::Float32;
  ShapeDynamism dynamism_ = ShapeDynamism::Static;
  uint8_t rank_ = 0;
  std::array<int64_t, kMaxRank> sizes_{};
  std::array<int64_t, kMaxRank> strides_{};
  std::array<uint8_t, kMaxRank> dim_order_{};
  int64_t numel_ = 1;
  void* data_ = nullptr;
  size_t capacity_ = 0;
  size_t bound_nbytes_ = 0;
  uint64_t constant_id_ = 0;
};

/// True when the bytes two tensors span at their data pointers overlap
/// (each taken as numel * element size from data(); empty tensors overlap
/// nothing).
bool share_bytes(const Tensor& a, const Tensor& b);

/// "float32[2, 3]" (plus the dim order when it is not contiguous).
std::string describe(const Tensor& t);

/// Writes the row-major strides (in elements) of `sizes` into `strides`, of
/// the same length; a zero size counts as 1, so strides stay distinct.
void contiguous_strides(std::span<const int64_t> sizes, std::span<int64_t> strides);
/// The same, as a new vector (for callers off the per-call path).
std::vector<int64_t> contiguous_strides(std::span<const int64_t> sizes);

/// A shape as Python prints a tuple: "(2, 3)", "(5,)", "()".
std::string shape_text(std::span<const int64_t> sizes);

}  // namespace pterun
