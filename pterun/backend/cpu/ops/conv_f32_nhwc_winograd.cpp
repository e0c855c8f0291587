// The channels-last f32 convolution's Winograd part: 3x3 kernels with
// stride 1 and dilation 1, one group, input and output channels whole
// vectors (ResNet's 3x3 layers). Each 2x2 block of output pixels (a tile)
// is computed from the 4x4 block of input pixels under it as
// Y = A^T [(G g G^T) . (B^T d B)] A (Winograd's F(2x2, 3x3)): 16 products
// of channel vectors per tile where the direct convolution takes 36, for
// about 60 additions of vectors that transform the input and output.
//
//  - The weights' transforms U = G g G^T are made once per weight tensor,
//    in double, and kept as [channel block][16 positions][input][block].
//  - Tiles go in groups of kTiles. A group's inputs are transformed into a
//    per-thread buffer [position][tile][input channel] (zeros over the
//    padding); then, for each block of output channels and each of the 16
//    positions, a register block of kTiles x NV vectors multiplies them by
//    U (one broadcast input per tile and channel), and the group's outputs
//    are transformed back with bias, residual and activation in the stores.
//
// Against the direct kernels it rounds differently (the transforms add and
// subtract inputs and partial sums of products): F(2x2, 3x3)'s constants
// are 0, +-1 and +-1/2, and its error stays within a few units of float
// rounding of the largest terms. A tile whose transformed outputs are not
// all finite (an infinite or NaN input or weight, which the transforms'
// sums of opposite signs would turn into NaN where the direct sum gives an
// infinity) is computed as the direct sum instead. PTERUN_WINOGRAD=0 turns
// it off.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/conv_f32_nhwc_shared.h"

namespace pterun::cpu::nhwc {
namespace {

constexpr int kTiles = kWide ? 12 : 6;  // tiles per group: the register block's rows

bool winograd_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("PTERUN_WINOGRAD");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

struct WinoPlan {
  const ConvProblem* p = nullptr;
  int64_t tiles_h = 0, tiles_w = 0, tiles = 0;
  int64_t block = 0;   // output channels per block (NV vectors)
  int64_t blocks = 0;  // oc / block
  const float* u = nullptr;
  const float* bias = nullptr;  // oc floats
  Epilogue e;
};

/// U = G g G^T for every (output, input) channel pair, as
/// [block][position][input][output channel within the block];
/// G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
void pack_winograd(const ConvProblem& p, const WinoPlan& wp, float* u) {
  const float* w = static_cast<const float*>(p.weight);
  const int64_t* ws = p.w_strides;
  for (int64_t k = 0; k < p.oc; ++k) {
    const int64_t b = k / wp.block, kk = k % wp.block;
    for (int64_t c = 0; c < p.ic; ++c) {
      double g[3][3], gg[4][3];
      for (int y = 0; y < 3; ++y) {
        for (int x = 0; x < 3; ++x) g[y][x] = w[k * ws[0] + c * ws[1] + y * ws[2] + x * ws[3]];
      }
      for (int x = 0; x < 3; ++x) {
        gg[0][x] = g[0][x];
        gg[1][x] = 0.5 * (g[0][x] + g[1][x] + g[2][x]);
        gg[2][x] = 0.5 * (g[0][x] - g[1][x] + g[2][x]);
        gg[3][x] = g[2][x];
      }
      for (int i = 0; i < 4; ++i) {
        const double row[4] = {gg[i][0], 0.5 * (gg[i][0] + gg[i][1] + gg[i][2]),
                               0.5 * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
        for (int j = 0; j < 4; ++j) {
          u[((b * 16 + i * 4 + j) * p.ic + c) * wp.block + kk] = static_cast<float>(row[j]);
        }
      }
    }
  }
}

/// Where a tile is: image, tile row and tile column.
struct TileAt {
  int64_t n, ty, tx;
};

/// The input transform of the tile at `at` into row `t` of `vt`
/// ([position][kTiles][ic]): V = B^T d B with
/// B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]].
/// IC > 0: ic is IC and the input's pixels are IC floats apart (every
/// displacement a constant).
template <typename V, int64_t IC, bool Inside>
void transform_input_at(const WinoPlan& wp, const float* base, const bool (&ok)[4][4], int t,
                        float* vt) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const ConvProblem& p = *wp.p;
  const int64_t ic = IC > 0 ? IC : p.ic;
  const int64_t cs = IC > 0 ? IC : p.in_strides[3];
  const int64_t step = kTiles * ic;  // between positions in vt
  const float* rows[4] = {base, base + p.in_strides[2], base + 2 * p.in_strides[2],
                          base + 3 * p.in_strides[2]};
  float* dst = vt + t * ic;
  for (int64_t c = 0; c < ic; c += L) {
    auto d = [&](int i, int j) {
      if constexpr (Inside) {
        return load<V>(rows[i] + j * cs + c);
      } else {
        return ok[i][j] ? load<V>(rows[i] + j * cs + c) : V{};
      }
    };
    V s[4][4];
    for (int j = 0; j < 4; ++j) {
      const V d0 = d(0, j), d1 = d(1, j), d2 = d(2, j), d3 = d(3, j);
      s[0][j] = d0 - d2;
      s[1][j] = d1 + d2;
      s[2][j] = d2 - d1;
      s[3][j] = d1 - d3;
    }
    float* o = dst + c;
    for (int i = 0; i < 4; ++i) {
      store(o + (i * 4 + 0) * step, s[i][0] - s[i][2]);
      store(o + (i * 4 + 1) * step, s[i][1] + s[i][2]);
      store(o + (i * 4 + 2) * step, s[i][2] - s[i][1]);
      store(o + (i * 4 + 3) * step, s[i][1] - s[i][3]);
    }
  }
}

template <typename V, int64_t IC>
void transform_input(const WinoPlan& wp, const TileAt& at, int t, float* vt) {
  const ConvProblem& p = *wp.p;
  const int64_t y0 = at.ty * 2 - p.pad[0], x0 = at.tx * 2 - p.pad[1];
  const float* base = static_cast<const float*>(p.in) + at.n * p.in_strides[0] +
                      y0 * p.in_strides[2] + x0 * p.in_strides[3];
  bool ok[4][4];
  bool inside = true;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      ok[i][j] = y0 + i >= 0 && y0 + i < p.ih && x0 + j >= 0 && x0 + j < p.iw;
      inside = inside && ok[i][j];
    }
  }
  if (inside) {
    transform_input_at<V, IC, true>(wp, base, ok, t, vt);
  } else {
    transform_input_at<V, IC, false>(wp, base, ok, t, vt);
  }
}

// One position's products for a group: m[t][v] = sum_c vt[t][c] * u[c][v],
// kTiles x NV accumulators indexed by constants only (conv_f32_block.h says
// why). IC > 0 makes the input channels a constant: each tile's input is
// then a fixed displacement from one pointer.
template <typename V, int NV, int64_t IC, size_t... I>
void multiply_impl(const float* vt, const float* u, int64_t ic_, int64_t block, float* m,
                   std::index_sequence<I...>) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const int64_t ic = IC > 0 ? IC : ic_;
  V acc[kTiles * NV];
  ((acc[I] = V{}), ...);
  for (int64_t c = 0; c < ic; ++c, ++vt, u += block) {
    V w[NV];
    for (int v = 0; v < NV; ++v) w[v] = load<V>(u + v * L);
    ((acc[I] += vt[static_cast<int64_t>(I / NV) * ic] * w[I % NV]), ...);
  }
  (store(m + (I / NV) * block + (I % NV) * L, acc[I]), ...);
}

/// Whether every lane of `v` is finite: v - v is +0 there, NaN elsewhere.
template <typename V>
bool finite(V v) {
  const V z = v - v;
  uint64_t words[sizeof(V) / 8];
  std::memcpy(words, &z, sizeof z);
  uint64_t any = 0;
  for (uint64_t w : words) any |= w;
  return any == 0;
}

/// Output pixel (y, x) of image n, channels [k, k + lanes), as the direct
/// sum over the taps (no bias): where the transforms met an infinity or a
/// NaN, whose sums with opposite signs would give NaN where the direct sum
/// gives an infinity.
template <typename V>
V direct_sum(const WinoPlan& wp, int64_t n, int64_t y, int64_t x, int64_t k) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const ConvProblem& p = *wp.p;
  const float* w = static_cast<const float*>(p.weight);
  const int64_t* ws = p.w_strides;
  float acc[L] = {};
  for (int64_t ky = 0; ky < 3; ++ky) {
    const int64_t iy = y + ky - p.pad[0];
    if (iy < 0 || iy >= p.ih) continue;
    for (int64_t kx = 0; kx < 3; ++kx) {
      const int64_t ix = x + kx - p.pad[1];
      if (ix < 0 || ix >= p.iw) continue;
      const float* src = static_cast<const float*>(p.in) + n * p.in_strides[0] +
                         iy * p.in_strides[2] + ix * p.in_strides[3];
      for (int64_t c = 0; c < p.ic; ++c) {
        const float* wk = w + k * ws[0] + c * ws[1] + ky * ws[2] + kx * ws[3];
        for (int64_t l = 0; l < L; ++l) acc[l] += src[c] * wk[l * ws[0]];
      }
    }
  }
  return load<V>(acc);
}

/// The output transform of row `t` of `m` ([position][kTiles][block]) for
/// block `b` into the tile at `at`, with bias, residual and activation:
/// Y = A^T M A, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]].
template <typename V, int NV>
void transform_output(const WinoPlan& wp, const TileAt& at, int t, int64_t b, const float* m) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  constexpr int64_t kBlock = NV * L;
  const ConvProblem& p = *wp.p;
  const int64_t y0 = at.ty * 2, x0 = at.tx * 2;
  const int64_t* os = p.out_strides;
  const int64_t* rs = p.residual_strides;
  const int64_t k0 = b * kBlock;
  float* out = static_cast<float*>(p.out) + at.n * os[0] + y0 * os[2] + x0 * os[3] + k0;
  const float* res = p.residual == nullptr ? nullptr
                                           : static_cast<const float*>(p.residual) + at.n * rs[0] +
                                                 y0 * rs[2] + x0 * rs[3] + k0;
  const int rows = y0 + 1 < p.oh ? 2 : 1, cols = x0 + 1 < p.ow ? 2 : 1;
  const int64_t step = kTiles * kBlock;  // between positions in m
  const float* mt = m + t * kBlock;
  for (int64_t v = 0; v < kBlock; v += L) {
    V s[2][4];
    for (int j = 0; j < 4; ++j) {
      const V m0 = load<V>(mt + (0 + j) * step + v), m1 = load<V>(mt + (4 + j) * step + v);
      const V m2 = load<V>(mt + (8 + j) * step + v), m3 = load<V>(mt + (12 + j) * step + v);
      s[0][j] = m0 + m1 + m2;
      s[1][j] = m1 - m2 - m3;
    }
    const V bias = load<V>(wp.bias + k0 + v);
    V y[2][2];
    for (int i = 0; i < 2; ++i) {
      y[i][0] = s[i][0] + s[i][1] + s[i][2];
      y[i][1] = s[i][1] - s[i][2] - s[i][3];
    }
    const bool exact = finite(y[0][0] + y[0][1] + y[1][0] + y[1][1]);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) {
        V o = exact ? y[i][j] : direct_sum<V>(wp, at.n, y0 + i, x0 + j, k0 + v);
        o += bias;
        if (res != nullptr) o += load<V>(res + i * rs[2] + j * rs[3] + v);
        store(out + i * os[2] + j * os[3] + v, finish(o, wp.e));
      }
    }
  }
}

/// Tiles [g0, g0 + count) (count <= kTiles) with `vt` and `m` this
/// thread's buffers. IC as for transform_input.
template <typename V, int NV, int64_t IC>
void run_group(const WinoPlan& wp, int64_t g0, int count, float* vt, float* m) {
  constexpr int64_t kBlock = NV * sizeof(V) / sizeof(float);
  const ConvProblem& p = *wp.p;
  const int64_t ic = IC > 0 ? IC : p.ic;
  const int64_t per_image = wp.tiles_h * wp.tiles_w;
  const TileAt first{g0 / per_image, g0 % per_image / wp.tiles_w, g0 % wp.tiles_w};
  TileAt at = first;
  auto next = [&](TileAt& a) {
    if (++a.tx == wp.tiles_w) {
      a.tx = 0;
      if (++a.ty == wp.tiles_h) {
        a.ty = 0;
        ++a.n;
      }
    }
  };
  for (int t = 0; t < count; ++t, next(at)) transform_input<V, IC>(wp, at, t, vt);
  for (int t = count; t < kTiles; ++t) {  // the block's unused rows
    for (int pos = 0; pos < 16; ++pos) {
      std::memset(vt + (pos * kTiles + t) * ic, 0, static_cast<size_t>(ic) * sizeof(float));
    }
  }
  constexpr auto kAll = std::make_index_sequence<kTiles * NV>{};
  for (int64_t b = 0; b < wp.blocks; ++b) {
    for (int pos = 0; pos < 16; ++pos) {
      multiply_impl<V, NV, IC>(vt + pos * kTiles * ic, wp.u + (b * 16 + pos) * ic * kBlock, ic,
                               kBlock, m + pos * kTiles * kBlock, kAll);
    }
    at = first;
    for (int t = 0; t < count; ++t, next(at)) transform_output<V, NV>(wp, at, t, b, m);
  }
}

template <typename V, int NV>
void run_group_any(const WinoPlan& wp, int64_t g0, int count, float* vt, float* m) {
  const ConvProblem& p = *wp.p;
  if (p.in_strides[3] == p.ic) {
    switch (p.ic) {
      case 16: return run_group<V, NV, 16>(wp, g0, count, vt, m);
      case 32: return run_group<V, NV, 32>(wp, g0, count, vt, m);
      case 64: return run_group<V, NV, 64>(wp, g0, count, vt, m);
      default: break;
    }
  }
  run_group<V, NV, 0>(wp, g0, count, vt, m);
}

}  // namespace

bool winograd(KernelContext& ctx, const ConvProblem& p, const Epilogue& e) {
  using V = std::conditional_t<kWide, V16, V8>;
  if (!winograd_enabled() || p.groups != 1 || p.kh != 3 || p.kw != 3) return false;
  if (p.stride[0] != 1 || p.stride[1] != 1 || p.dilation[0] != 1 || p.dilation[1] != 1) {
    return false;
  }
  if (p.ic % kLanes != 0 || p.oc % kLanes != 0 || p.in_strides[1] != 1 || p.in_strides[3] < p.ic) {
    return false;
  }
  WinoPlan wp;
  wp.p = &p;
  const int nv = p.oc % (2 * kLanes) == 0 ? 2 : 1;
  wp.block = nv * kLanes;
  wp.blocks = p.oc / wp.block;
  const int64_t packed = 16 * p.ic * p.oc;
  if (packed > kMaxPackedWeights) return false;
  wp.tiles_h = (p.oh + 1) / 2;
  wp.tiles_w = (p.ow + 1) / 2;
  wp.tiles = p.n * wp.tiles_h * wp.tiles_w;
  wp.e = e;

  PlanKey key;
  key.add({p.ic, p.oc, wp.block});
  thread_local PlanCache<Packed> cache(64);
  Packed& pk = packed_weights(cache, key, p, packed, [&](float* w) { pack_winograd(p, wp, w); });
  copy_bias(p, pk, p.oc);
  wp.u = pk.w.data();
  wp.bias = pk.bias.data();

  const int64_t groups = (wp.tiles + kTiles - 1) / kTiles;
  const double work = static_cast<double>(wp.tiles) * 16.0 * static_cast<double>(p.ic * p.oc);
  const bool split = ctx.num_threads > 1 && work >= kParallelWork && groups > 1;
  const int64_t slot = 16 * kTiles * (p.ic + wp.block);
  const int64_t slots = split ? ctx.num_threads : 1;
  auto* scratch =
      static_cast<float*>(ctx.scratch(static_cast<size_t>(slots * slot) * sizeof(float)));
  auto body = [&](int64_t begin, int64_t end) {
    float* vt = scratch + (split ? parallel_thread_index() : 0) * slot;
    float* m = vt + 16 * kTiles * p.ic;
    for (int64_t gi = begin; gi < end; ++gi) {
      const int64_t g0 = gi * kTiles;
      const int count = static_cast<int>(std::min<int64_t>(kTiles, wp.tiles - g0));
      if (nv == 2) {
        run_group_any<V, 2>(wp, g0, count, vt, m);
      } else {
        run_group_any<V, 1>(wp, g0, count, vt, m);
      }
    }
  };
  if (split) {
    cpu::parallel_for(ctx, groups, static_cast<int64_t>(work / static_cast<double>(groups)), body);
  } else {
    body(0, groups);
  }
  return true;
}

}  // namespace pterun::cpu::nhwc
