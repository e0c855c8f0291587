#pragma once

// The memory layout a CPU method keeps its activations in between
// convolutions, chosen at load (Method::Loader::choose_layouts).

#include <cstdint>
#include <vector>

#include "pterun/format/program_desc.h"

namespace pterun {

/// The float32 activations of a method to keep channels-last (dim order
/// [0, 2, 3, 1]) instead of the contiguous order the exporter gave them.
/// Every kernel reads and writes any layout, so which one a tensor has is
/// a matter of speed only; channels-last is chosen where the CPU's
/// channels-last convolution kernel is the faster one: for networks with
/// depthwise convolutions (2.6-4.7x faster channels-last) and for those
/// whose convolutions all have 16-128 output channels (a three-channel
/// stem 1.2x faster, 64-128 channels 1.12x, 16-32 within 4%, no padded band
/// copies; wider layers are faster in NCHW, narrower ones fill half a
/// vector; docs/cpu-blas.md).
///
/// A value qualifies when it is a static 4-D float32 tensor that an
/// instruction writes, in the method's own planned memory, with more than
/// one channel and one pixel, in the contiguous order, not in `keep`
/// (inputs, outputs, state, values re-pointed at run time), mentioned only
/// by kernels that treat memory layout as a matter of speed (convolution,
/// batch norm, activations, elementwise arithmetic, pooling, mean,
/// concatenation, view_copy), and whose bytes no other tensor alive at the
/// same time shares (an in-place result; a view the exporter planned inside
/// it counts as alive throughout). Qualifying values that one instruction
/// mentions together form a group; a group is returned whole when one of
/// its convolutions is depthwise (one input channel per group, as many
/// output channels), or when it has convolutions and each has 16-128 output
/// channels. Methods with jumps or moves are left alone.
std::vector<int32_t> find_channels_last_values(const format::MethodDesc& d,
                                               const std::vector<bool>& keep);

}  // namespace pterun
