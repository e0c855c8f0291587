#include "pterun/core/tensor.h"

#include <string>

#include "pterun/core/error.h"

namespace pterun {

Tensor::Tensor(DType dtype, std::span<const int64_t> sizes, std::span<const uint8_t> dim_order,
               ShapeDynamism dynamism)
    : dtype_(dtype), dynamism_(dynamism) {
  PTERUN_CHECK(sizes.size() <= kMaxRank, ErrorCode::InvalidArgument, "tensor: rank ", sizes.size(),
               " exceeds ", kMaxRank);
  reshape_unchecked(sizes, dim_order);
  bound_nbytes_ = nbytes();
}

bool Tensor::is_contiguous_order() const {
  for (size_t i = 0; i < rank_; ++i) {
    if (dim_order_[i] != i) return false;
  }
  return true;
}

bool Tensor::is_channels_last_order() const {
  if (rank_ == 4) {
    return dim_order_[0] == 0 && dim_order_[1] == 2 && dim_order_[2] == 3 && dim_order_[3] == 1;
  }
  if (rank_ == 5) {
    return dim_order_[0] == 0 && dim_order_[1] == 2 && dim_order_[2] == 3 && dim_order_[3] == 4 &&
           dim_order_[4] == 1;
  }
  return false;
}

void Tensor::reshape_unchecked(std::span<const int64_t> sizes, std::span<const uint8_t> dim_order) {
  PTERUN_CHECK(sizes.size() <= kMaxRank, ErrorCode::InvalidArgument, "tensor: rank ", sizes.size(),
               " exceeds ", kMaxRank);
  PTERUN_CHECK(dim_order.empty() || dim_order.size() == sizes.size(), ErrorCode::InvalidArgument,
               "tensor: dim order of length ", dim_order.size(), " for rank ", sizes.size());
  rank_ = static_cast<uint8_t>(sizes.size());
  numel_ = 1;
  for (size_t i = 0; i < rank_; ++i) {
    PTERUN_CHECK(sizes[i] >= 0, ErrorCode::InvalidArgument, "tensor: negative size ", sizes[i]);
    sizes_[i] = sizes[i];
    numel_ *= sizes[i];
    dim_order_[i] = dim_order.empty() ? static_cast<uint8_t>(i) : dim_order[i];
  }
  compute_strides();
}

void Tensor::compute_strides() {
  // Innermost dimension in memory has stride 1; a zero size counts as 1 so
  // that strides stay meaningful for empty tensors.
  int64_t stride = 1;
  for (size_t i = rank_; i-- > 0;) {
    uint8_t d = dim_order_[i];
    strides_[d] = stride;
    stride *= sizes_[d] == 0 ? 1 : sizes_[d];
  }
}

void Tensor::set_strides_unchecked(std::span<const int64_t> strides) {
  PTERUN_CHECK(strides.size() == rank_, ErrorCode::Internal, "tensor: ", strides.size(),
               " strides for rank ", int{rank_});
  for (size_t i = 0; i < rank_; ++i) strides_[i] = strides[i];
}

void Tensor::resize(std::span<const int64_t> sizes) {
  PTERUN_CHECK(sizes.size() == rank_, ErrorCode::InvalidArgument, "resize: rank ", sizes.size(),
               " given for a tensor of rank ", int{rank_});
  bool same = true;
  for (size_t i = 0; i < rank_; ++i) same = same && sizes[i] == sizes_[i];
  if (same) return;
  PTERUN_CHECK(dynamism_ != ShapeDynamism::Static, ErrorCode::NotSupported,
               "resize: static tensor ", describe(*this), " cannot change its shape");
  int64_t n = 1;
  for (int64_t s : sizes) {
    PTERUN_CHECK(s >= 0, ErrorCode::InvalidArgument, "resize: negative size ", s);
    PTERUN_CHECK(s == 0 || n <= INT64_MAX / s, ErrorCode::InvalidArgument, "resize: size overflow");
    n *= s;
  }
  size_t need = static_cast<size_t>(n) * element_size();
  size_t limit = dynamism_ == ShapeDynamism::DynamicBound ? bound_nbytes_ : SIZE_MAX;
  if (data_ != nullptr && capacity_ < limit) limit = capacity_;
  PTERUN_CHECK(need <= limit, ErrorCode::InvalidArgument, "resize: ", need,
               " bytes exceed the tensor's bound of ", limit, " bytes");
  for (size_t i = 0; i < rank_; ++i) sizes_[i] = sizes[i];
  numel_ = n;
  compute_strides();
}

bool share_bytes(const Tensor& a, const Tensor& b) {
  const auto* a0 = static_cast<const char*>(a.data());
  const auto* b0 = static_cast<const char*>(b.data());
  return a.nbytes() > 0 && b.nbytes() > 0 && a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

std::string describe(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype())) + "[";
  for (size_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  s += "]";
  if (!t.is_contiguous_order()) {
    s += " dim_order=(";
    for (size_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.dim_order()[i]);
    s += ")";
  }
  return s;
}

void contiguous_strides(std::span<const int64_t> sizes, std::span<int64_t> strides) {
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d] == 0 ? 1 : sizes[d];
  }
}

std::vector<int64_t> contiguous_strides(std::span<const int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size());
  contiguous_strides(sizes, strides);
  return strides;
}

std::string shape_text(std::span<const int64_t> sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += str_cat(i ? ", " : "", sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

}  // namespace pterun
