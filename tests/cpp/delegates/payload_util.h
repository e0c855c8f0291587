#pragma once

// What the delegate tests build their methods from: a finished XNNPACK
// flatbuffer in the XH00 header (constants by named key need it), and a
// planned [2, 3] method value.

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "pterun/format/program_desc.h"

namespace pterun::delegates::xnn_test {

/// The XH00 header (30 bytes, padded to 32) and the flatbuffer at 32.
inline std::vector<uint8_t> with_header(const flatbuffers::FlatBufferBuilder& b) {
  const size_t size = b.GetSize(), padded = (size + 15) / 16 * 16;
  std::vector<uint8_t> out(32 + padded, 0);
  auto put = [&](size_t at, uint64_t v, size_t width) {
    for (size_t i = 0; i < width; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  std::memcpy(out.data() + 4, "XH00", 4);
  put(8, 30, 2);
  put(10, 32, 4);
  put(14, size, 4);
  put(18, 32 + padded, 4);
  std::memcpy(out.data() + 32, b.GetBufferPointer(), size);
  return out;
}

/// A [2, 3] tensor of `dtype` at `offset` of planned memory id 1.
inline format::ValueDesc planned_value(DType dtype, uint64_t offset) {
  auto t = std::make_shared<format::TensorDesc>();
  t->dtype = dtype;
  t->sizes = {2, 3};
  t->dim_order = {0, 1};
  t->storage = format::TensorStorage::Planned;
  t->memory_id = 1;
  t->memory_offset = offset;
  t->numel = 6;
  t->nbytes = 6 * element_size(dtype);
  format::ValueDesc v;
  v.kind = ValueKind::Tensor;
  v.tensor = t;
  return v;
}

}  // namespace pterun::delegates::xnn_test
