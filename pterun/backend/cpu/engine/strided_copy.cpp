#include "pterun/backend/cpu/engine/strided_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/kernels/common/copy_plan.h"

namespace pterun::cpu {

namespace {

/// Offsets of row `row` of the dimensions before `dims` (outermost first).
std::pair<int64_t, int64_t> outer_offsets(const kernels::CopyPlan& p, size_t dims, int64_t row) {
  int64_t doff = 0, soff = 0;
  for (size_t d = dims; d-- > 0;) {
    const int64_t i = row % p.sizes[d];
    row /= p.sizes[d];
    doff += i * p.dst[d];
    soff += i * p.src[d];
  }
  return {doff, soff};
}

void copy_rows(const kernels::CopyPlan& p, char* dst, const char* src, size_t es, int64_t begin,
               int64_t end) {
  // The innermost dimension is copied as one memcpy when both sides are
  // dense there, element by element otherwise.
  const size_t r = p.rank;
  const int64_t inner = r == 0 ? 1 : p.sizes[r - 1];
  const int64_t dst_inner = r == 0 ? static_cast<int64_t>(es) : p.dst[r - 1];
  const int64_t src_inner = r == 0 ? static_cast<int64_t>(es) : p.src[r - 1];
  const bool dense = dst_inner == static_cast<int64_t>(es) && src_inner == static_cast<int64_t>(es);
  for (int64_t row = begin; row < end; ++row) {
    const auto [doff, soff] = outer_offsets(p, r == 0 ? 0 : r - 1, row);
    char* dr = dst + doff;
    const char* sr = src + soff;
    if (dense) {
      std::memcpy(dr, sr, static_cast<size_t>(inner) * es);
    } else if (es == 4) {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, 4);
    } else if (es == 2) {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, 2);
    } else if (es == 8) {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, 8);
    } else {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dr + i * dst_inner, sr + i * src_inner, es);
    }
  }
}

/// Edge of the square tiles a transpose moves (32 x 32 floats: 4 KiB read,
/// 4 KiB written, both in L1).
constexpr int64_t kTile = 32;

/// Tiles [begin, end) of a copy whose last two dimensions are a transpose:
/// the destination dense along the last (B), the source along the one
/// before (A). A tile's source lines are read once into L1 and its
/// destination written in runs, so neither side is walked with a large
/// stride across the whole array (element by element along B would read
/// one element per source line).
template <typename E>
void transpose_tiles(const kernels::CopyPlan& p, char* dst, const char* src, int64_t begin,
                     int64_t end) {
  const size_t r = p.rank;
  const int64_t a_size = p.sizes[r - 2], b_size = p.sizes[r - 1];
  const int64_t a_tiles = (a_size + kTile - 1) / kTile, b_tiles = (b_size + kTile - 1) / kTile;
  const int64_t da = p.dst[r - 2], sb = p.src[r - 1];
  for (int64_t t = begin; t < end; ++t) {
    const int64_t bt = t % b_tiles, at = t / b_tiles % a_tiles, row = t / (a_tiles * b_tiles);
    const auto [doff, soff] = outer_offsets(p, r - 2, row);
    const int64_t a0 = at * kTile, a1 = std::min(a_size, a0 + kTile);
    const int64_t b0 = bt * kTile, b1 = std::min(b_size, b0 + kTile);
    // Destination runs in the inner loop: the source lines of the tile stay
    // in L1 while each destination run is written whole (the other order
    // writes to rows a power-of-two apart, which share L1 sets).
    for (int64_t a = a0; a < a1; ++a) {
      const char* from = src + soff + a * static_cast<int64_t>(sizeof(E));
      char* to = dst + doff + a * da;
      for (int64_t b = b0; b < b1; ++b) {
        E v;
        std::memcpy(&v, from + b * sb, sizeof(E));
        std::memcpy(to + b * static_cast<int64_t>(sizeof(E)), &v, sizeof(E));
      }
    }
  }
}

/// Elements along A per item of a narrow transpose.
constexpr int64_t kNarrowChunk = 1024;

/// Items [begin, end) (chunks of kNarrowChunk along A) of a transpose whose
/// destination lines are B elements (2 to 4: an image's channels, NCHW to
/// NHWC): B source lines read side by side, each destination line written
/// whole, with B known to the compiler (tiles of 32 x B spend their time
/// on loop control).
template <typename E, int B>
void transpose_narrow(const kernels::CopyPlan& p, char* dst, const char* src, int64_t begin,
                      int64_t end) {
  const size_t r = p.rank;
  const int64_t a_size = p.sizes[r - 2];
  const int64_t chunks = (a_size + kNarrowChunk - 1) / kNarrowChunk;
  const int64_t da = p.dst[r - 2], sb = p.src[r - 1];
  for (int64_t t = begin; t < end; ++t) {
    const int64_t chunk = t % chunks, row = t / chunks;
    const auto [doff, soff] = outer_offsets(p, r - 2, row);
    const int64_t a0 = chunk * kNarrowChunk, a1 = std::min(a_size, a0 + kNarrowChunk);
    if (da == B * static_cast<int64_t>(sizeof(E))) {
      // Destination lines back to back: element b of line a at a * B + b,
      // the B source lines read side by side.
      char* to = dst + doff;
      const char* lines[B];
      for (int b = 0; b < B; ++b) lines[b] = src + soff + b * sb;
      for (int64_t a = a0; a < a1; ++a) {
        for (int b = 0; b < B; ++b) {
          std::memcpy(to + (a * B + b) * static_cast<int64_t>(sizeof(E)),
                      lines[b] + a * static_cast<int64_t>(sizeof(E)), sizeof(E));
        }
      }
      continue;
    }
    for (int64_t a = a0; a < a1; ++a) {
      const char* from = src + soff + a * static_cast<int64_t>(sizeof(E));
      char* to = dst + doff + a * da;
      E v[B];
      for (int b = 0; b < B; ++b) std::memcpy(&v[b], from + b * sb, sizeof(E));
      std::memcpy(to, v, sizeof v);
    }
  }
}

/// Runs transpose_narrow for elements E; false for a B it does not take.
template <typename E>
bool narrow_for(const kernels::KernelContext& ctx, const kernels::CopyPlan& p, char* dst,
                const char* src, int64_t items, int64_t b_size) {
  if (b_size < 2 || b_size > 4) return false;
  parallel_for(ctx, items, kNarrowChunk * b_size, [&](int64_t b, int64_t end) {
    if (b_size == 2) return transpose_narrow<E, 2>(p, dst, src, b, end);
    if (b_size == 3) return transpose_narrow<E, 3>(p, dst, src, b, end);
    transpose_narrow<E, 4>(p, dst, src, b, end);
  });
  return true;
}

/// Runs the copy as tiles of a transpose when its last two dimensions are
/// one (and large enough for it to matter); false otherwise.
bool transpose_copy(const kernels::KernelContext& ctx, const kernels::CopyPlan& p, char* dst,
                    const char* src, size_t es) {
  const size_t r = p.rank;
  const auto e = static_cast<int64_t>(es);
  if (r < 2 || p.dst[r - 1] != e || p.src[r - 2] != e || p.src[r - 1] == e) return false;
  if (es != 1 && es != 2 && es != 4 && es != 8) return false;
  const int64_t a_size = p.sizes[r - 2], b_size = p.sizes[r - 1];
  if (a_size < 4) return false;
  int64_t rows = 1;
  for (size_t i = 0; i + 2 < r; ++i) rows *= p.sizes[i];
  // Destination lines of a few elements (and the source's of one each way).
  if (b_size <= 4 && es <= 4) {
    const int64_t items = rows * ((a_size + kNarrowChunk - 1) / kNarrowChunk);
    const bool done = es == 4   ? narrow_for<uint32_t>(ctx, p, dst, src, items, b_size)
                      : es == 2 ? narrow_for<uint16_t>(ctx, p, dst, src, items, b_size)
                                : narrow_for<uint8_t>(ctx, p, dst, src, items, b_size);
    if (done) return true;
  }
  const int64_t tiles = rows * ((a_size + kTile - 1) / kTile) * ((b_size + kTile - 1) / kTile);
  parallel_for(ctx, tiles, kTile * kTile * e / 4, [&](int64_t b, int64_t end) {
    if (es == 1) return transpose_tiles<uint8_t>(p, dst, src, b, end);
    if (es == 2) return transpose_tiles<uint16_t>(p, dst, src, b, end);
    if (es == 4) return transpose_tiles<uint32_t>(p, dst, src, b, end);
    transpose_tiles<uint64_t>(p, dst, src, b, end);
  });
  return true;
}

}  // namespace

void strided_copy(const kernels::KernelContext& ctx, void* dst,
                  std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size) {
  if (kernels::has_zero_extent(sizes)) return;
  // Both sides row-major and dense, and small (a squeeze, an unsqueeze, a
  // copy): one memcpy, no plan.
  if (sizes.size() == dst_strides.size() && sizes.size() == src_strides.size()) {
    int64_t expect = 1;
    bool dense = true;
    for (size_t d = sizes.size(); d-- > 0 && dense;) {
      dense = sizes[d] == 1 || (dst_strides[d] == expect && src_strides[d] == expect);
      expect *= sizes[d];
    }
    constexpr int64_t kSmall = int64_t{1} << 16;
    if (dense && expect * static_cast<int64_t>(element_size) <= kSmall) {
      std::memcpy(dst, src, static_cast<size_t>(expect) * element_size);
      return;
    }
  }
  kernels::CopyPlan p = kernels::make_copy_plan(dst_strides, src_strides, sizes, element_size);
  int64_t inner = p.rank == 0 ? 1 : p.sizes[p.rank - 1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < p.rank; ++i) rows *= p.sizes[i];
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (transpose_copy(ctx, p, d, s, element_size)) return;
  const auto es = static_cast<int64_t>(element_size);
  if (rows == 1 && p.rank > 0 && p.dst[p.rank - 1] == es && p.src[p.rank - 1] == es) {
    // One dense run (a whole tensor in the same layout): pieces of 64 KiB,
    // so that a large copy is split over the threads too.
    constexpr int64_t kPiece = int64_t{1} << 16;
    const int64_t bytes = inner * es;
    parallel_for(ctx, (bytes + kPiece - 1) / kPiece, kPiece / 4, [&](int64_t b, int64_t e) {
      std::memcpy(d + b * kPiece, s + b * kPiece,
                  static_cast<size_t>(std::min(e * kPiece, bytes) - b * kPiece));
    });
    return;
  }
  parallel_for(ctx, rows, inner * static_cast<int64_t>(element_size) / 4 + 1,
               [&](int64_t b, int64_t e) { copy_rows(p, d, s, element_size, b, e); });
}

void strided_copy(void* dst, std::span<const int64_t> dst_strides, const void* src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                  size_t element_size) {
  kernels::KernelContext ctx;
  strided_copy(ctx, dst, dst_strides, src, src_strides, sizes, element_size);
}

}  // namespace pterun::cpu
