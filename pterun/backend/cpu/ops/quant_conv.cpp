// The quantized 2-D convolution on the CPU (ops/quant.h): integer
// accumulation (quant_gemm.h for the products, depthwise in registers
// here), then one requantization per output (quant_requant.h; this file
// is built without fused multiply-adds).
//
// Convolution works on a channels-last copy of each image with its padding
// (made once per call unless the input is channels-last and unpadded), so
// that the im2col row of an output pixel is a few contiguous runs of input
// channels, with no bounds to test; a 1x1, stride-1, unpadded convolution
// of a channels-last image reads its pixels in place. The copy of an int8
// image is stored + 128 (uint8 with the zero point + 128), which the
// products take as their unsigned operand with no row sums owed; and a
// few input channels (not a multiple of 4, one group) are widened to the
// next multiple of 4 with weights of 0, so that the product reads each
// window in place instead of copying it out.

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/quant_conv_copy.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_panels.h"
#include "pterun/backend/cpu/ops/quant_requant.h"
#include "pterun/backend/cpu/ops/quant_util.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_visit.h"
#include "pterun/ops/quant.h"

namespace pterun::cpu {

using kernels::KernelContext;

namespace {

/// The geometry of one convolution, in elements; the image is read
/// channels-last: pixel (y, x) of image b at image + b * image_stride +
/// (y * width + x) * pixel_stride, its channels contiguous.
struct ConvGeometry : ops::QConvShape {
  const uint8_t* image;  // channels-last bytes (int8 or uint8)
  int64_t image_stride;
  int64_t pixel_stride;
};

/// Output pixel p (row-major over the output's height and width) as its
/// offset in a layout of `col` elements a pixel and `row` an output row
/// (its window's corner in the image, its place in the output, its
/// window sums), stepped to the next pixel's without a multiply or a
/// division.
struct PixelOffset {
  int64_t at, ow, width, col, wrap;
  PixelOffset(int64_t p, int64_t out_width, int64_t col, int64_t row)
      : at(p / out_width * row + p % out_width * col),
        ow(p % out_width),
        width(out_width),
        col(col),
        wrap(row - (out_width - 1) * col) {}
  void next() {
    if (++ow == width) {
      ow = 0;
      at += wrap;
    } else {
      at += col;
    }
  }
};

/// The im2col rows of output pixels [p0, p0 + rows) of image b, group g, in
/// the weight's order along K, `pitch` bytes apart, from the padded image
/// (its border holds the input's zero point, a real 0); with Flip every
/// byte + 128 (int8 as uint8).
template <bool Flip>
void im2col(const ConvGeometry& c, int64_t b, int64_t g, int64_t p0, int64_t rows, uint8_t* dst,
            int64_t pitch) {
  const uint8_t* image = c.image + b * c.image_stride + g * c.cg;
  const int64_t taps = c.kh * c.kw;
  const int64_t run = c.kw * c.cg;  // one kernel row, when its taps are adjacent
  const bool adjacent = c.weight_channels_last && c.dw == 1 && c.cg == c.pixel_stride;
  PixelOffset px(p0, c.out_width, c.sw * c.pixel_stride, c.sh * c.width * c.pixel_stride);
  for (int64_t r = 0; r < rows; ++r, px.next()) {
    uint8_t* row = dst + r * pitch;
    for (int64_t i = 0; i < c.kh; ++i) {
      const uint8_t* src = image + px.at + i * c.dh * c.width * c.pixel_stride;
      if (adjacent) {
        copy_run<Flip>(row + i * run, src, run);
        continue;
      }
      for (int64_t j = 0; j < c.kw; ++j) {
        const uint8_t* tap_src = src + j * c.dw * c.pixel_stride;
        const int64_t tap = i * c.kw + j;
        if (c.weight_channels_last) {
          copy_run<Flip>(row + tap * c.cg, tap_src, c.cg);
        } else {
          uint8_t* d = row + tap;
          for (int64_t ic = 0; ic < c.cg; ++ic) {
            d[ic * taps] = Flip ? static_cast<uint8_t>(tap_src[ic] ^ 0x80) : tap_src[ic];
          }
        }
      }
    }
  }
}

/// windows[r] = the first byte of the window of output pixel p0 + r of
/// image b, group g (its top-left tap's channels).
void window_corners(const ConvGeometry& c, int64_t b, int64_t g, int64_t p0, int64_t rows,
                    const uint8_t** windows) {
  const uint8_t* image = c.image + b * c.image_stride + g * c.cg;
  PixelOffset px(p0, c.out_width, c.sw * c.pixel_stride, c.sh * c.width * c.pixel_stride);
  for (int64_t r = 0; r < rows; ++r, px.next()) windows[r] = image + px.at;
}

/// out[r] = the sum of the bytes (as int8) of the window of output pixel
/// p0 + r of image b, group g, from `sums` (each padded pixel's sum per
/// group: qgemm_pixel_sums).
void window_sums_of(const ConvGeometry& c, const int32_t* sums, int64_t b, int64_t g, int64_t p0,
                    int64_t rows, int32_t* out) {
  PixelOffset px(p0, c.out_width, c.sw * c.groups, c.sh * c.width * c.groups);
  for (int64_t r = 0; r < rows; ++r, px.next()) {
    const int32_t* at = sums + b * c.height * c.width * c.groups + g + px.at;
    int32_t sum = 0;
    for (int64_t i = 0; i < c.kh; ++i) {
      for (int64_t j = 0; j < c.kw; ++j) sum += at[(i * c.dh * c.width + j * c.dw) * c.groups];
    }
    out[r] = sum;
  }
}

/// True when the im2col row of every pixel is the input pixel itself.
bool pointwise(const ops::QConvShape& c) {
  return c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && c.ph == 0 && c.pw == 0 &&
         c.groups == 1;
}

constexpr int64_t kPixelBlock = 32;

/// Channels of the depthwise weights as laid out for depthwise_rows: whole
/// vectors of 16.
inline int64_t depthwise_lanes(int64_t channels) {
  return (channels + 15) / 16 * 16;
}

/// Depthwise accumulators acc[r][ch] = sum over the window of
/// (x - zero_point) * w[ch, tap] for output pixels [p0, p0 + rows) of image
/// b of the padded image (taps in the border add nothing). `tap_weights` is
/// [tap][depthwise_lanes(channels)], each weight an int32 whose high 16
/// bits are 0 (the int16 pair (w, 0): one vpdpwssd multiplies it by an
/// input in the low half of its lane, whatever the input's high half);
/// `offsets[ch]` is -zero_point * (the sum of channel ch's weights), so
/// the window's products are of the stored bytes.
template <typename In>
void depthwise_rows(const ConvGeometry& c, int64_t b, int64_t p0, int64_t rows,
                    const int32_t* tap_weights, const int32_t* offsets, int32_t* acc) {
  const int64_t channels = c.out_channels, lanes = depthwise_lanes(channels);
  const uint8_t* image = c.image + b * c.image_stride;
  const int64_t row_step = c.dh * c.width * c.pixel_stride, tap_step = c.dw * c.pixel_stride;
  PixelOffset px(p0, c.out_width, c.sw * c.pixel_stride, c.sh * c.width * c.pixel_stride);
  auto corner = [&] { return image + px.at; };
  int64_t r = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  auto widen = [](__m128i bytes) {
    return std::is_same_v<In, int8_t> ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
  };
  auto multiply_add = [](__m512i sum, __m512i x, __m512i w) {
#if defined(__AVX512VNNI__)
    return _mm512_dpwssd_epi32(sum, x, w);
#else
    return _mm512_add_epi32(sum, _mm512_madd_epi16(x, w));
#endif
  };
  // Two pixels at a time (two sums in flight over the taps), sixteen
  // channels a vector, the last few masked.
  for (; r < rows; r += 2) {
    const bool pair = r + 1 < rows;
    const uint8_t* first = corner();
    px.next();
    const uint8_t* second = first;
    if (pair) {
      second = corner();
      px.next();
    }
    for (int64_t ch = 0; ch < channels; ch += 16) {
      const __mmask16 m = channels - ch >= 16 ? __mmask16{0xFFFF}
                                              : static_cast<__mmask16>((1u << (channels - ch)) - 1);
      __m512i s0 = _mm512_maskz_loadu_epi32(m, offsets + ch), s1 = s0;
      const int32_t* w = tap_weights + ch;
      for (int64_t i = 0; i < c.kh; ++i) {
        const int64_t at = i * row_step + ch;
        for (int64_t j = 0; j < c.kw; ++j, w += lanes) {
          const __m512i wv = _mm512_load_si512(w);
          s0 = multiply_add(s0, widen(_mm_maskz_loadu_epi8(m, first + at + j * tap_step)), wv);
          s1 = multiply_add(s1, widen(_mm_maskz_loadu_epi8(m, second + at + j * tap_step)), wv);
        }
      }
      _mm512_mask_storeu_epi32(acc + r * channels + ch, m, s0);
      if (pair) _mm512_mask_storeu_epi32(acc + (r + 1) * channels + ch, m, s1);
    }
  }
#endif
  for (; r < rows; ++r, px.next()) {
    const uint8_t* window = corner();
    int32_t* a = acc + r * channels;
    std::copy(offsets, offsets + channels, a);
    for (int64_t i = 0; i < c.kh; ++i) {
      for (int64_t j = 0; j < c.kw; ++j) {
        const auto* x = reinterpret_cast<const In*>(window + i * row_step + j * tap_step);
        const int32_t* w = tap_weights + (i * c.kw + j) * lanes;
        for (int64_t k = 0; k < channels; ++k) {
          a[k] += int32_t{x[k]} * int32_t{static_cast<int16_t>(static_cast<uint16_t>(w[k]))};
        }
      }
    }
  }
}

}  // namespace

void quantized_conv2d(KernelContext& ctx, const ops::QConv2dArgs& a) {
  ConvGeometry c{ops::qconv_shape(a), nullptr, 0, 0};
  const ops::QConvShape given = c;

  const int64_t pixels = c.out_height * c.out_width;
  const int64_t pixel_blocks = (pixels + kPixelBlock - 1) / kPixelBlock;
  // Depthwise (one input and one output channel per group) runs directly
  // over every channel at once; the rest as a product per group.
  const bool depthwise = c.cg == 1 && c.og == 1 && c.groups > 1;
  const int64_t task_groups = depthwise ? 1 : c.groups;
  const int64_t width = depthwise ? c.out_channels : c.og;  // channels a task computes
  const int64_t taps = c.kh * c.kw;
  const int64_t tasks = c.batch * task_groups * pixel_blocks;
  const int threads = std::max(1, ctx.num_threads);
  const bool in_unsigned = a.in.dtype() == DType::UInt8;
  // The weights packed once per call (qgemm_packed), from a few pixels on.
  const bool packed = !depthwise && qgemm_packs() && c.batch * pixels >= kQgemmPackRows;
  const bool amx_rows = packed && !pointwise(c) && qgemm_amx_pays(c.og, c.k);
  // A few input channels widened to a multiple of 4 in the staged image,
  // their weights 0 (see the top of this file).
  const bool widen = packed && !amx_rows && !pointwise(c) && c.groups == 1 &&
                     c.weight_channels_last && c.cg % 4 != 0;
  if (widen) {
    c.cg = (c.cg + 3) / 4 * 4;
    c.k = c.cg * taps;
  }
  const int64_t pixel_channels = widen ? c.cg : c.channels;  // of the staged image
  // A float32 input (QuantBackend::float_io) is quantized to int8 as it
  // is staged.
  const bool float_in = a.in.dtype() == DType::Float32;
  const bool staged = widen || float_in || !a.in.is_channels_last_order() || c.ph > 0 || c.pw > 0;
  // The image the kernels read holds uint8 (a staged int8 image is + 128).
  const bool image_unsigned = in_unsigned || staged;
  const int32_t image_zero_point =
      a.rq.in_q.zero_point + (image_unsigned && !in_unsigned ? 128 : 0);
  const size_t image_bytes =
      static_cast<size_t>(c.batch * (c.height + 2 * c.ph) * (c.width + 2 * c.pw) * pixel_channels);
  const size_t terms_bytes = aligned(static_cast<size_t>(2 * c.out_channels) * sizeof(float));
  const size_t stage_bytes = staged ? aligned(image_bytes) : 0;
  const size_t acc_bytes = aligned(static_cast<size_t>(kPixelBlock * width) * sizeof(int32_t));
  const size_t out_bytes = aligned(static_cast<size_t>(kPixelBlock * width));
  const size_t tap_weight_bytes =
      aligned(static_cast<size_t>(taps * depthwise_lanes(c.out_channels)) * sizeof(int32_t));
  const size_t taps_bytes =
      depthwise ? tap_weight_bytes + aligned(static_cast<size_t>(c.out_channels) * sizeof(int32_t))
                : 0;
  const size_t wide_bytes = widen ? aligned(static_cast<size_t>(c.og * c.k)) : 0;
  const int64_t panel_bytes = qgemm_panel_bytes(c.k), group_panels = (c.og + 15) / 16;
  // The packed product reads each pixel's window in place (no im2col) when
  // the weight's inputs run (tap, channel) and every tap's channels are
  // whole groups of 4: `groups` holds each group's offset from the window.
  // AMX tiles load rows of 64 bytes, so there the windows are copied out
  // (im2col), each row padded to whole steps of 64 (`pitch`; what the
  // padding holds meets the packed weights' zeros). Copied rows of int8
  // are stored + 128: rows of uint8 with the zero point + 128, which owe no
  // sums of their own.
  const bool gather =
      packed && !amx_rows && c.weight_channels_last && c.cg % 4 == 0 && !pointwise(c);
  const int64_t pitch = amx_rows ? (c.k + 63) / 64 * 64 : c.k;
  const bool rows_unsigned = image_unsigned || (!gather && !pointwise(c) && !depthwise);
  const int32_t rows_zero_point = a.rq.in_q.zero_point + (rows_unsigned && !in_unsigned ? 128 : 0);
  const size_t cols_bytes = aligned(static_cast<size_t>(kPixelBlock * pitch));
  const size_t groups_bytes = gather ? aligned(static_cast<size_t>(c.k / 4) * sizeof(int32_t)) : 0;
  // int8 windows owe their sums (qgemm_packed): each padded pixel's sum per
  // group, once, from which a window's is its taps'.
  const bool pixel_sums = gather && !image_unsigned;
  const size_t sums_bytes = pixel_sums ? aligned(image_bytes / static_cast<size_t>(pixel_channels) *
                                                 static_cast<size_t>(c.groups) * sizeof(int32_t))
                                       : 0;
  const size_t slot = cols_bytes + acc_bytes + out_bytes;
  auto* scratch =
      static_cast<char*>(ctx.scratch(terms_bytes + stage_bytes + taps_bytes + groups_bytes +
                                     sums_bytes + wide_bytes + slot * threads));
  const Requant terms = requant_terms(a.rq, c.out_channels, scratch);
  // Depthwise weights tap-major ([tap][lane], see depthwise_rows), and
  // each channel's -zero_point * (sum of its weights).
  auto* tap_weights = reinterpret_cast<int32_t*>(scratch + terms_bytes + stage_bytes);
  auto* offsets =
      reinterpret_cast<int32_t*>(scratch + terms_bytes + stage_bytes + tap_weight_bytes);
  if (depthwise) {
    const int8_t* w = a.weight.data_as<const int8_t>();  // [C][KH][KW] in either order
    const int64_t lanes = depthwise_lanes(c.out_channels);
    std::fill(tap_weights, tap_weights + taps * lanes, 0);
    for (int64_t ch = 0; ch < c.out_channels; ++ch) {
      int32_t sum = 0;
      for (int64_t t = 0; t < taps; ++t) {
        tap_weights[t * lanes + ch] = static_cast<uint16_t>(int16_t{w[ch * taps + t]});
        sum += w[ch * taps + t];
      }
      offsets[ch] = -image_zero_point * sum;
    }
  }

  // The image read channels-last with its padding: in place, or copied
  // over (from NCHW, or into a border of zero points).
  const auto* in = a.in.data_as<const uint8_t>();
  auto* stage = reinterpret_cast<uint8_t*>(scratch + terms_bytes);
  const int64_t ph = c.ph, pw = c.pw, hp = c.height + 2 * ph, wp = c.width + 2 * pw;
  c.image = staged ? stage : in;
  c.height = hp;
  c.width = wp;
  c.ph = c.pw = 0;
  c.image_stride = c.height * c.width * pixel_channels;
  c.pixel_stride = pixel_channels;
  // The packed weights, from this thread's cache: packed again only when
  // their bytes changed.
  const int8_t* weight = a.weight.data_as<const int8_t>();
  const auto weight_bytes = static_cast<size_t>(c.groups * c.og * given.k);
  const int8_t* pack_from = weight;  // rows of c.k bytes
  uint8_t* pack = nullptr;
  bool pack_now = false;
  PackedWeights* kept = nullptr;
  if (packed) {
    // The channels as given too: a widened packing depends on them.
    kept = &kept_panels(weight, {c.groups, c.og, c.k, given.cg * 2 + (rows_unsigned ? 1 : 0)},
                        static_cast<size_t>(c.groups * group_panels * panel_bytes));
    pack = kept->panels();
    pack_now = !kept->packed_from(weight, weight_bytes, a.weight.constant_id());
    if (pack_now) kept->forget();
  }
  if (widen && pack_now) {  // each tap's channels, then zeros up to the widened count
    auto* wide = reinterpret_cast<int8_t*>(scratch + terms_bytes + stage_bytes + taps_bytes +
                                           groups_bytes + sums_bytes);
    for (int64_t row = 0; row < c.og * taps; ++row) {
      std::memcpy(wide + row * c.cg, weight + row * given.cg, static_cast<size_t>(given.cg));
      std::memset(wide + row * c.cg + given.cg, 0, static_cast<size_t>(c.cg - given.cg));
    }
    pack_from = wide;
  }
  auto* groups = reinterpret_cast<int32_t*>(scratch + terms_bytes + stage_bytes + taps_bytes);
  auto* sums = reinterpret_cast<int32_t*>(reinterpret_cast<char*>(groups) + groups_bytes);
  if (gather) {
    int32_t* group = groups;  // the weight's inputs run (tap, channel), 4 channels a group
    for (int64_t i = 0; i < c.kh; ++i) {
      for (int64_t j = 0; j < c.kw; ++j) {
        const int64_t tap = (i * c.dh * c.width + j * c.dw) * c.pixel_stride;
        for (int64_t ic = 0; ic < c.cg; ic += 4) *group++ = static_cast<int32_t>(tap + ic);
      }
    }
  }
  // One parallel region prepares what the products read: the weights
  // packed for qgemm_packed, a task per panel, group after group; then a
  // task per padded image row: the row staged (its border, then its
  // pixels: NCHW channel by channel, channels-last one run) and its pixels'
  // channel sums.
  const int64_t pack_tasks = pack_now ? c.groups * group_panels : 0;
  const int64_t row_tasks = staged || pixel_sums ? c.batch * hp : 0;
  if (pack_tasks + row_tasks > 0) {
    // A staged int8 image is stored + 128; widened channels hold the
    // border's byte (their weights are 0).
    const auto pad = static_cast<uint8_t>(image_zero_point);
    const bool flip = staged && !in_unsigned;
    const int64_t s0 = a.in.stride(0), s1 = a.in.stride(1), s2 = a.in.stride(2),
                  s3 = a.in.stride(3);
    const bool nchw = a.in.is_contiguous_order();
    const int64_t pc = pixel_channels;
    const WidenPixels widen_pixels(c.channels, pc, pad);
    auto stage_row = [&]<bool Flip>(int64_t e) {
      const int64_t b = e / hp, y = e % hp - ph;
      uint8_t* dst = stage + e * wp * pc;
      if (y < 0 || y >= given.height) {
        std::memset(dst, pad, static_cast<size_t>(wp * pc));
        return;
      }
      std::memset(dst, pad, static_cast<size_t>(pw * pc));
      std::memset(dst + (pw + given.width) * pc, pad, static_cast<size_t>(pw * pc));
      uint8_t* px = dst + pw * pc;
      if (float_in) {
        stage_floats(px, a.in.data_as<const float>() + b * s0 + y * s2, given.width, c.channels, s1,
                     s3, pc, 1.0f / a.rq.in_q.scale, static_cast<float>(a.rq.in_q.zero_point), pad);
        return;
      }
      const uint8_t* src = in + b * s0 + y * s2;
      const uint8_t top = Flip ? 0x80 : 0;
      if (nchw) {
        for (int64_t ch = 0; ch < c.channels; ++ch) {
          for (int64_t x = 0; x < given.width; ++x) {
            px[x * pc + ch] = static_cast<uint8_t>(src[ch * s1 + x * s3] ^ top);
          }
        }
        for (int64_t ch = c.channels; ch < pc; ++ch) {
          for (int64_t x = 0; x < given.width; ++x) px[x * pc + ch] = pad;
        }
      } else if (pc == c.channels) {
        copy_run<Flip>(px, src, given.width * pc);
      } else {
        widen_pixels.template operator()<Flip>(px, src, given.width);
      }
    };
    parallel_for(ctx, pack_tasks + row_tasks, std::max(16 * c.k, wp * pc),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t t = begin; t < end; ++t) {
                     if (t < pack_tasks) {
                       const int64_t g = t / group_panels, panel = t % group_panels;
                       qgemm_pack(pack_from + g * c.og * c.k, c.k, c.og, c.k, !rows_unsigned, panel,
                                  panel + 1, pack + g * group_panels * panel_bytes);
                       continue;
                     }
                     const int64_t row = t - pack_tasks;
                     if (flip) {
                       stage_row.template operator()<true>(row);
                     } else if (staged) {
                       stage_row.template operator()<false>(row);
                     }
                     if (pixel_sums) {
                       qgemm_pixel_sums(c.image, c.pixel_stride, c.groups, c.cg, row * wp,
                                        (row + 1) * wp, sums);
                     }
                   }
                 });
  }
  if (pack_now) kept->remember(weight, weight_bytes, a.weight.constant_id());

  const int64_t o0 = a.out.stride(0), o1 = a.out.stride(1), o2 = a.out.stride(2),
                o3 = a.out.stride(3);
  // From the shape as given: the staged geometry has no padding left.
  const bool direct = pointwise(given);
  kernels::visit_q8(a.out.dtype(), [&]<typename Out>() {
    Out* out = a.out.data_as<Out>();
    parallel_for(ctx, tasks, std::max<int64_t>(1, kPixelBlock * c.og * c.k / 8),
                 [&](int64_t begin, int64_t end) {
                   char* mine = scratch + terms_bytes + stage_bytes + taps_bytes + groups_bytes +
                                sums_bytes + wide_bytes + slot * parallel_thread_index();
                   const uint8_t* windows[kPixelBlock];
                   int32_t window_sums[kPixelBlock];
                   uint8_t* out_rows[kPixelBlock];
                   auto* cols = reinterpret_cast<uint8_t*>(mine);
                   auto* acc = reinterpret_cast<int32_t*>(mine + cols_bytes);
                   auto* tile = reinterpret_cast<Out*>(mine + cols_bytes + acc_bytes);
                   for (int64_t t = begin; t < end; ++t) {
                     const int64_t pb = t % pixel_blocks;
                     const int64_t g = t / pixel_blocks % task_groups;
                     const int64_t b = t / pixel_blocks / task_groups;
                     const int64_t p0 = pb * kPixelBlock;
                     const int64_t rows = std::min(kPixelBlock, pixels - p0);
                     if (depthwise) {
                       if (image_unsigned) {
                         depthwise_rows<uint8_t>(c, b, p0, rows, tap_weights, offsets, acc);
                       } else {
                         depthwise_rows<int8_t>(c, b, p0, rows, tap_weights, offsets, acc);
                       }
                     } else {
                       const uint8_t* a_rows = cols;
                       if (direct) {
                         a_rows = c.image + b * c.image_stride + p0 * c.pixel_stride;
                       } else if (gather) {
                         window_corners(c, b, g, p0, rows, windows);
                         if (pixel_sums) window_sums_of(c, sums, b, g, p0, rows, window_sums);
                       } else if (rows_unsigned && !image_unsigned) {
                         im2col<true>(c, b, g, p0, rows, cols, pitch);
                       } else {
                         im2col<false>(c, b, g, p0, rows, cols, pitch);
                       }
                       const QGemm gemm{a_rows,
                                        direct ? c.k : pitch,
                                        rows_unsigned,
                                        rows_zero_point,
                                        a.weight.data_as<const int8_t>() + g * c.og * c.k,
                                        c.k,
                                        a.weight_sums.data_as<const int32_t>() + g * c.og,
                                        rows,
                                        c.og,
                                        c.k,
                                        gather ? windows : nullptr,
                                        groups,
                                        pixel_sums ? window_sums : nullptr,
                                        amx_rows};
                       const uint8_t* panels = pack + g * group_panels * panel_bytes;
                       if (amx_rows) {
                         qgemm_packed_amx(gemm, panels, acc, c.og);
                       } else if (packed && o1 == 1) {
                         // Channels innermost: each pixel's outputs requantized
                         // in the product's stores, in place.
                         Out* image = out + b * o0 + g * width;
                         PixelOffset px(p0, c.out_width, o3, o2);
                         for (int64_t r = 0; r < rows; ++r, px.next()) {
                           out_rows[r] = reinterpret_cast<uint8_t*>(image + px.at);
                         }
                         qgemm_packed_requant(gemm, panels,
                                              {out_rows,
                                               {terms.mult + g * width, terms.bias + g * width,
                                                terms.inv, terms.zero_point, terms.lo, terms.hi},
                                               std::is_same_v<Out, uint8_t>});
                         continue;
                       } else if (packed) {
                         qgemm_packed(gemm, panels, acc, c.og);
                       } else {
                         qgemm(gemm, acc, c.og);
                       }
                     }
                     Out* image = out + b * o0 + g * width * o1;
                     if (o1 == 1 && o3 == width && o2 == c.out_width * o3) {
                       // The block's pixels one after another: one run.
                       requantize_pixels(acc, rows, width, terms, g * width,
                                         image + (p0 / c.out_width) * o2 + (p0 % c.out_width) * o3);
                     } else if (o1 == 1) {  // channels innermost: each pixel's run in place
                       PixelOffset px(p0, c.out_width, o3, o2);
                       for (int64_t r = 0; r < rows; ++r, px.next()) {
                         requantize_run(acc + r * width, width, terms, g * width, image + px.at);
                       }
                     } else {
                       for (int64_t r = 0; r < rows; ++r) {
                         requantize_run(acc + r * width, width, terms, g * width, tile + r * width);
                       }
                       if (o3 == 1 && o2 == c.out_width) {  // NCHW: pixels run per channel
                         for (int64_t j = 0; j < width; ++j) {
                           Out* o = image + j * o1 + p0;
                           for (int64_t r = 0; r < rows; ++r) o[r] = tile[r * width + j];
                         }
                       } else {
                         PixelOffset px(p0, c.out_width, o3, o2);
                         for (int64_t r = 0; r < rows; ++r, px.next()) {
                           Out* o = image + px.at;
                           for (int64_t j = 0; j < width; ++j) o[j * o1] = tile[r * width + j];
                         }
                       }
                     }
                   }
                 });
  });
}

}  // namespace pterun::cpu
