#include "pterun/kernels/common/shape_util.h"

#include <algorithm>

#include "pterun/core/error.h"

namespace pterun::kernels {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (size_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

void Shape::push_back(int64_t d) {
  PTERUN_CHECK(rank < kMaxRank, ErrorCode::InvalidArgument, "shape: rank exceeds ", kMaxRank);
  dims[rank++] = d;
}

namespace {

/// Broadcasts `s` into `out` (rank already the largest).
void broadcast_into(Shape& out, std::span<const int64_t> s, const char* op) {
  const size_t offset = out.rank - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t& o = out.dims[offset + i];
    if (s[i] == o || s[i] == 1) continue;
    PTERUN_CHECK(o == 1, ErrorCode::InvalidArgument, op, ": shapes do not broadcast (size ", s[i],
                 " against ", o, " in dimension ", offset + i, ")");
    o = s[i];
  }
}

}  // namespace

Shape broadcast_shapes(std::initializer_list<std::span<const int64_t>> shapes, const char* op) {
  Shape out;
  for (auto s : shapes) out.rank = std::max(out.rank, s.size());
  for (size_t i = 0; i < out.rank; ++i) out.dims[i] = 1;
  for (auto s : shapes) broadcast_into(out, s, op);
  return out;
}

void resize_output(Tensor& out, std::span<const int64_t> sizes, const char* op) {
  try {
    out.resize(sizes);
  } catch (const Error& e) {
    throw Error(e.code(), str_cat(op, ": output ", describe(out), ": ", e.what()));
  }
}

void resize_to_broadcast(Tensor& out, std::span<const Tensor* const> inputs, const char* op) {
  // Inputs of one shape (the common case) broadcast to that shape.
  const std::span<const int64_t> first = inputs[0]->sizes();
  if (std::all_of(inputs.begin() + 1, inputs.end(),
                  [&](const Tensor* t) { return same_dims(t->sizes(), first); })) {
    return resize_output(out, first, op);
  }
  Shape s;
  for (const Tensor* t : inputs) s.rank = std::max(s.rank, t->dim());
  PTERUN_CHECK(s.rank <= kMaxRank, ErrorCode::InvalidArgument, op, ": rank exceeds ", kMaxRank);
  for (size_t i = 0; i < s.rank; ++i) s.dims[i] = 1;
  for (const Tensor* t : inputs) broadcast_into(s, t->sizes(), op);
  resize_output(out, s.span(), op);
}

void resize_to_broadcast(Tensor& out, std::initializer_list<const Tensor*> inputs, const char* op) {
  resize_to_broadcast(out, std::span<const Tensor* const>(inputs.begin(), inputs.size()), op);
}

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  int64_t r = rank == 0 ? 1 : rank;
  PTERUN_CHECK(dim >= -r && dim < r, ErrorCode::IndexOutOfRange, op, ": dimension ", dim,
               " is out of range for rank ", rank);
  return dim < 0 ? dim + r : dim;
}

}  // namespace pterun::kernels
