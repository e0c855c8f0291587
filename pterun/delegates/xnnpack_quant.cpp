// Which quantized XNNPACK nodes pterun runs, and their filters as tensors
// of xnnpack::fully_connected_dq (xnnpack_quant.h).

#include "pterun/delegates/xnnpack_quant.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/core/half.h"
#include "pterun/core/str_cat.h"

namespace pterun::delegates {
namespace {

using format::kXnnNoValue;
using format::XnnDatatype;
using format::XnnGraphDesc;
using format::XnnNodeType;
using format::XnnQuantKind;
using format::XnnValueDesc;

bool is_quantized(XnnDatatype t) {
  switch (t) {
    case XnnDatatype::Fp32:
    case XnnDatatype::Fp16:
    case XnnDatatype::BF16:
    case XnnDatatype::Int32: return false;
    default: return true;
  }
}

bool touches_quantized(const XnnValueDesc& v) {
  return is_quantized(v.datatype) || v.dq_datatype.has_value();
}

bool plain_fp32(const XnnValueDesc& v) {
  return v.datatype == XnnDatatype::Fp32 && !v.dq_datatype.has_value();
}

/// Every (node, input slot) reading value `v`.
std::vector<std::pair<size_t, size_t>> readers(const XnnGraphDesc& g, int32_t v) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const auto& in = g.nodes[n].inputs;
    for (size_t s = 0; s < in.size(); ++s) {
      if (in[s] == v) out.emplace_back(n, s);
    }
  }
  return out;
}

/// Empty when every reader of `v` is a FullyConnected node taking it as
/// its input (slot 0); else why not.
std::string read_only_by_fc(const XnnGraphDesc& g, int32_t v) {
  for (auto [n, slot] : readers(g, v)) {
    if (g.nodes[n].type != XnnNodeType::FullyConnected || slot != 0) {
      return str_cat("value ", g.values[v].id, " is quantized at run time and read by node ", n,
                     " (", format::xnn_node_type_name(g.nodes[n].type),
                     "); only FullyConnected inputs are implemented");
    }
  }
  return {};
}

std::string check_filter(const XnnValueDesc& f) {
  const bool per_channel = f.datatype == XnnDatatype::QCInt8 || f.datatype == XnnDatatype::QCInt4;
  if (!per_channel && f.datatype != XnnDatatype::QBInt4) {
    return str_cat("filter datatype ", format::xnn_datatype_name(f.datatype),
                   " with a dynamically quantized input is not implemented (qcint8, qcint4, "
                   "qbint4 are)");
  }
  if (!f.is_constant || f.dims.size() != 2 || f.quant.channel_dim != 0) {
    return "a quantized filter must be a constant [out, in] with its scales along dim 0";
  }
  if (f.dims[1] == 0) return "a quantized filter without inputs is not implemented";
  return {};
}

/// The FullyConnected node `n` whose input is quantized at run time.
std::string check_dynamic_fc(const XnnGraphDesc& g, size_t n) {
  const format::XnnNodeDesc& node = g.nodes[n];
  const XnnValueDesc& in = g.values[node.inputs[0]];
  const bool dynamic = in.datatype == XnnDatatype::QDInt8 || in.dq_datatype.has_value();
  if (!dynamic) {
    return str_cat("input datatype ", format::xnn_datatype_name(in.datatype),
                   " beside values quantized at run time is not implemented");
  }
  if (in.datatype == XnnDatatype::QDInt8 && (in.is_input || in.is_output)) {
    return "an external qdint8 value is not implemented";
  }
  if (node.flags != 0) return "a transposed quantized filter is not implemented";
  if (std::string why = check_filter(g.values[node.inputs[1]]); !why.empty()) return why;
  if (node.inputs[2] != kXnnNoValue && !plain_fp32(g.values[node.inputs[2]])) {
    return str_cat("bias datatype ", format::xnn_datatype_name(g.values[node.inputs[2]].datatype),
                   " with a dynamically quantized input is not implemented (fp32 is)");
  }
  if (!plain_fp32(g.values[node.outputs[0]])) {
    return "a dynamically quantized FullyConnected must write fp32";
  }
  return {};
}

/// The Convert node `n` writing a quantized value.
std::string check_convert(const XnnGraphDesc& g, size_t n) {
  const format::XnnNodeDesc& node = g.nodes[n];
  const XnnValueDesc& in = g.values[node.inputs[0]];
  const XnnValueDesc& out = g.values[node.outputs[0]];
  if (out.datatype != XnnDatatype::QDInt8) {
    return str_cat("converting a value quantized at run time to ",
                   format::xnn_datatype_name(out.datatype), " is not implemented");
  }
  if (!plain_fp32(in)) {
    return str_cat("quantizing ", format::xnn_datatype_name(in.datatype),
                   " at run time is not implemented (fp32 is)");
  }
  if (out.is_input || out.is_output) return "an external qdint8 value is not implemented";
  if (out.quant.num_nonbatch_dims == 0) return "num_nonbatch_dims 0 is not implemented";
  return read_only_by_fc(g, node.outputs[0]);
}

}  // namespace

float xnn_scale(const format::XnnQuantParams& q, size_t i) {
  if (q.kind == XnnQuantKind::PerTensor) return q.scale;
  if (q.scale_data.empty()) return q.inline_scales[i];
  if (q.kind == XnnQuantKind::PerChannelGroup) {  // bf16 in named data
    uint16_t bits;
    std::memcpy(&bits, q.scale_data.data() + 2 * i, 2);
    return BFloat16::bits_to_float(bits);
  }
  float f;
  std::memcpy(&f, q.scale_data.data() + 4 * i, 4);
  return f;
}

std::optional<std::string> xnnpack_quantized_node(const XnnGraphDesc& g, size_t n) {
  const format::XnnNodeDesc& node = g.nodes[n];
  bool quantized = false;
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int32_t v : *ids)
      quantized = quantized || (v != kXnnNoValue && touches_quantized(g.values[v]));
  }
  if (!quantized) return std::nullopt;
  bool dynamic = false;
  for (const auto* ids : {&node.inputs, &node.outputs}) {
    for (int32_t v : *ids) {
      dynamic = dynamic || (v != kXnnNoValue && (g.values[v].datatype == XnnDatatype::QDInt8 ||
                                                 g.values[v].dq_datatype.has_value()));
    }
  }
  if (!dynamic) return xnnpack_static_node(g, n);
  switch (node.type) {
    case XnnNodeType::Convert: return check_convert(g, n);
    case XnnNodeType::FullyConnected: {
      const XnnValueDesc& in = g.values[node.inputs[0]];
      if (in.dq_datatype.has_value()) {
        if (std::string why = read_only_by_fc(g, node.inputs[0]); !why.empty()) return why;
      }
      return check_dynamic_fc(g, n);
    }
    default:
      for (int32_t v : node.inputs) {
        if (v != kXnnNoValue && g.values[v].dq_datatype.has_value()) {
          return read_only_by_fc(g, v);
        }
      }
      return str_cat(format::xnn_node_type_name(node.type),
                     " on values quantized at run time is not implemented (only "
                     "FullyConnected inputs are)");
  }
}

DynamicSource dynamic_source(const XnnGraphDesc& g, int32_t v) {
  if (g.values[v].dq_datatype.has_value()) return {v, 1};
  for (const format::XnnNodeDesc& node : g.nodes) {
    if (node.type == XnnNodeType::Convert && node.outputs[0] == v) {
      return {node.inputs[0], g.values[v].quant.num_nonbatch_dims};
    }
  }
  // The support check found the Convert; the data-flow check one writer.
  throw_error(ErrorCode::Internal, "a qdint8 value without its Convert");
}

namespace {

/// The top half of float `v`'s bits (exact for a value read as bfloat16).
uint16_t bf16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>(u >> 16);
}

/// The bfloat16 bits ExecuTorch's XNNPACK runtime makes of an inline
/// float32 block scale (older files): `v` times 1.00389105 in float32, then
/// the top 16 bits (close to rounding to nearest; 1 + 2^-8 goes up).
uint16_t xnn_bf16_of_inline(float v) {
  return bf16_bits(v * 1.00389105f);
}

}  // namespace

QuantFilter quant_filter(MethodBuilder& b, const XnnValueDesc& f, const std::string& what) {
  const int64_t n = f.dims[0], k = f.dims[1];
  const bool blockwise = f.quant.kind == XnnQuantKind::PerChannelGroup;
  const int64_t blocks = blockwise ? k / f.quant.group_size : 1;
  const int64_t bs = k / blocks;
  QuantFilter out;
  out.bits = f.datatype == XnnDatatype::QCInt8 ? 8 : 4;
  const int64_t row_bytes = out.bits == 8 ? k : (k + 1) / 2;
  // The file's bytes, copied into memory the method owns: a decode step
  // streams every filter from memory, and own() asks for 2 MiB pages where
  // the file's mapping has 4 KiB ones (the 8da4w LLM's filters stream
  // about 15% faster so on the Zen 4 VM).
  std::span<uint8_t> filter = b.own(f.data.size());
  if (!f.data.empty()) std::memcpy(filter.data(), f.data.data(), f.data.size());
  out.weight = b.add_constant(out.bits == 8 ? DType::Int8 : DType::UInt8, {n, row_bytes}, filter);

  // Block scales stay bfloat16, as XNNPACK keeps them: half the bytes a
  // decode step streams besides the weights. Per-channel scales stay
  // float32.
  const size_t scale_size = blockwise ? sizeof(BFloat16) : sizeof(float);
  std::span<uint8_t> scales = b.own(static_cast<size_t>(n * blocks) * scale_size);
  std::span<uint8_t> sums = b.own(static_cast<size_t>(n) * 4);
  std::vector<float> s(static_cast<size_t>(n * blocks));
  for (int64_t i = 0; i < n * blocks; ++i) {
    float v = xnn_scale(f.quant, static_cast<size_t>(i));
    if (blockwise) {
      const uint16_t bits = f.quant.scale_data.empty() ? xnn_bf16_of_inline(v) : bf16_bits(v);
      v = BFloat16::bits_to_float(bits);
      std::memcpy(scales.data() + 2 * i, &bits, 2);
    } else {
      std::memcpy(scales.data() + 4 * i, &v, 4);
    }
    PTERUN_CHECK(std::isnormal(v) && v > 0, ErrorCode::InvalidProgram, what, ": scale ", i,
                 " of filter value ", f.id, " is ", v,
                 " (a quantization scale must be a positive normal float)");
    s[static_cast<size_t>(i)] = v;
  }
  // What the zero points take back (ops::QDynLinearArgs): per output, the
  // sum of its weights (8-bit), or of each block's (w - 8) times the
  // block's scale (4-bit).
  const uint8_t* w = f.data.data();
  for (int64_t j = 0; j < n; ++j) {
    int64_t row = 0;
    double scaled = 0;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      int64_t sum = 0;
      for (int64_t e = blk * bs; e < (blk + 1) * bs; ++e) {
        if (out.bits == 8) {
          sum += static_cast<int8_t>(w[j * k + e]);
        } else {
          const uint8_t byte = w[j * row_bytes + e / 2];
          sum += (e % 2 == 0 ? byte & 0x0F : byte >> 4) - 8;
        }
      }
      row += sum;
      scaled += static_cast<double>(s[j * blocks + blk]) * static_cast<double>(sum);
    }
    if (out.bits == 8) {
      const auto v = static_cast<int32_t>(row);  // |row| <= 128 * k: checked at the call
      std::memcpy(sums.data() + 4 * j, &v, 4);
    } else {
      const auto v = static_cast<float>(scaled);
      std::memcpy(sums.data() + 4 * j, &v, 4);
    }
  }
  out.scales = b.add_constant(blockwise ? DType::BFloat16 : DType::Float32, {n, blocks}, scales);
  out.sums = b.add_constant(out.bits == 8 ? DType::Int32 : DType::Float32, {n}, sums);
  return out;
}

}  // namespace pterun::delegates
