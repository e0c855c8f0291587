// Our own f32 convolution for channels-last activations (input and output
// with their channels contiguous: NHWC tensors, as XNNPACK-delegated
// programs and channels-last torch tensors hold them). Vectorised over
// channels, so nothing is gathered or transposed:
//
// - Dense (groups == 1): an implicit GEMM. A tile of R output pixels x NV
//   vectors of output channels accumulates in registers; for each input
//   value a pixel reads, the value is broadcast and multiplied by a vector
//   of packed weights ([channel block][ky][kx][input channel][lanes],
//   zero-padded past the last output channel). Each pixel of a tile reads
//   through its own pointers: a whole kernel row (kw * ic consecutive
//   floats) each when the row's taps are adjacent in memory, else a tap
//   each. A row or tap over the top or bottom padding reads a row of
//   zeros; a kernel row crossing the left or right border reads a copy of
//   itself with zeros for the padding; layers whose kernel rows are a few
//   floats read a copy of their input padded left and right instead (which
//   also takes an NCHW image). Layers whose pixels' inputs lie 3, 6, 16 or
//   32 floats apart (and the planes of an NCHW image of a few channels) run
//   in strips of one row whose pixels are displacements from one pointer
//   per kernel row, reading the input where it lies when it has at most
//   one column of padding, else each thread copying the input rows of its
//   own output rows.
// - Winograd (3x3, stride 1, dilation 1, one group, channels in whole
//   vectors): F(2x2, 3x3), 16 products of channel vectors per 2x2 output
//   pixels instead of 36 (conv_f32_nhwc_winograd.cpp).
// - Depthwise (one input channel per group, multiplier 1): a vector of
//   channels per pixel, four pixels per step sharing each tap's weights
//   ([tap][channel], zero-padded to whole vectors); taps over the padding
//   are skipped.
//
// Both take bias, residual and activation in their stores, and split rows
// or tiles over the threads from 2^18 multiply-adds (depthwise 2^16). This file is the entry;
// the parts are conv_f32_nhwc_dense.cpp, conv_f32_nhwc_winograd.cpp and
// conv_f32_nhwc_depthwise.cpp.

#include "pterun/backend/cpu/ops/conv.h"
#include "pterun/backend/cpu/ops/conv_f32_nhwc_shared.h"

namespace pterun::cpu {

bool conv_f32_nhwc(kernels::KernelContext& ctx, const ConvProblem& p) {
  if (p.dtype != DType::Float32 || p.transposed || p.ic == 0) return false;
  if (p.out_strides[1] != 1) return false;
  if (p.residual != nullptr && p.residual_strides[1] != 1) return false;
  // A dense layer with short kernel rows takes any input through its copy;
  // otherwise the input's channels must be contiguous, and one image's
  // pixels must not overlap them (a broadcast input has a zero stride: the
  // NCHW kernel takes it).
  const bool copied = p.groups == 1 && nhwc::copies_input(p);
  if (!copied && (p.in_strides[1] != 1 || p.in_strides[3] < p.ic)) return false;
  if (p.out_strides[3] < p.oc) return false;
  nhwc::Epilogue e;
  e.hardswish = p.activation == ops::ConvActivation::Hardswish;
  if (p.activation == ops::ConvActivation::Clamp) {
    e.lo = static_cast<float>(p.clamp_min);
    e.hi = static_cast<float>(p.clamp_max);
  }
  if (p.groups == 1) return nhwc::winograd(ctx, p, e) || nhwc::dense(ctx, p, e);
  if (p.groups == p.ic && p.oc == p.ic) return nhwc::depthwise(ctx, p, e);
  return false;
}

}  // namespace pterun::cpu
