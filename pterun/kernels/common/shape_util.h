#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "pterun/core/tensor.h"

namespace pterun::kernels {

/// A small fixed-capacity shape (no allocation).
struct Shape {
  std::array<int64_t, kMaxRank> dims{};
  size_t rank = 0;
  std::span<const int64_t> span() const { return {dims.data(), rank}; }
  int64_t numel() const;
  void push_back(int64_t d);
};

/// Sorts dimension indices `dims[0..n)` so that `stride(d)` decreases
/// (outermost first), keeping the order of equal strides. Insertion sort:
/// n <= kMaxRank and, unlike std::stable_sort, it never allocates.
template <typename StrideOf>
void sort_dims_by_stride(size_t* dims, size_t n, StrideOf stride) {
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = i; j > 0 && stride(dims[j - 1]) < stride(dims[j]); --j) {
      const size_t t = dims[j - 1];
      dims[j - 1] = dims[j];
      dims[j] = t;
    }
  }
}

/// True when `a` and `b` hold the same values (a loop: ranks are small,
/// too small for std::equal's memcmp to pay).
inline bool same_dims(std::span<const int64_t> a, std::span<const int64_t> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

/// Whether shape `from` broadcasts to shape `to` (NumPy rules: aligned at
/// the trailing dims, each dim of `from` 1 or equal).
inline bool broadcasts_to(std::span<const int64_t> from, std::span<const int64_t> to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

/// NumPy broadcast of the given shapes. Error InvalidArgument naming `op`
/// when they do not broadcast.
Shape broadcast_shapes(std::initializer_list<std::span<const int64_t>> shapes, const char* op);

/// Resizes `out` to the broadcast shape of `inputs` (at least one).
void resize_to_broadcast(Tensor& out, std::span<const Tensor* const> inputs, const char* op);
void resize_to_broadcast(Tensor& out, std::initializer_list<const Tensor*> inputs, const char* op);

/// Resizes `out` to `sizes`, prefixing errors with `op`.
void resize_output(Tensor& out, std::span<const int64_t> sizes, const char* op);

/// `dim` wrapped into [0, rank) (negative counts from the end); rank 0
/// accepts -1 and 0. Error IndexOutOfRange naming `op` otherwise.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);

}  // namespace pterun::kernels
