// Reads an XNNPACK delegate payload (docs/format.md, "XNNPACK payloads"): the
// XH00 header, the verified FlatBuffer, the values with their constants and
// quantization parameters, then the nodes (xnnpack_nodes.cpp) and the data
// flow between them. Checks go beyond ExecuTorch's XNNPACK runtime where it
// trusts the file: header length, external ids against the call's args,
// constant sizes against dims, quantization parameters against dims.

#include "pterun/format/xnnpack_reader.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "pterun/core/checked_math.h"
#include "pterun/core/error.h"
#include "pterun/core/text.h"
#include "pterun/format/header.h"
#include "pterun/format/schema/xnnpack_generated.h"
#include "pterun/format/xnnpack_nodes.h"

namespace pterun::format {
namespace fb = pterun_fb::xnn;
namespace {

// XH00 header: 4 zero bytes, magic, u16 length, u32 flatbuffer offset and
// size, u32 constant-data offset, u64 constant-data size.
constexpr size_t kHeaderMinLength = 30;
constexpr size_t kMinFlatbufferSize = 8;  // root offset + identifier
constexpr uint64_t kMaxFlatbufferSize = (uint64_t{1} << 31) - 1;
constexpr uintptr_t kFlatbufferAlignment = 8;  // the schema's widest scalar
constexpr flatbuffers::uoffset_t kMaxDepth = 64;
constexpr flatbuffers::uoffset_t kMaxTables = 10'000'000;
// ExecuTorch's runtime refuses more (a corrupted count, it says).
constexpr uint32_t kMaxExterns = 4096;
constexpr uint32_t kFlagExternalInput = 1;
constexpr uint32_t kFlagExternalOutput = 2;

struct PayloadLayout {
  bool has_header = false;
  std::span<const uint8_t> flatbuffer;
  std::span<const uint8_t> constants;  // the header's constant region
};

PayloadLayout locate(std::span<const uint8_t> payload, std::string_view context) {
  PTERUN_CHECK(payload.size() >= kMinFlatbufferSize, ErrorCode::InvalidProgram, context, ": ",
               payload.size(), " bytes, too few for an XNNPACK payload");
  PayloadLayout out;
  if (std::memcmp(payload.data() + 4, "XH00", 4) != 0) {
    out.flatbuffer = payload;  // legacy: a bare FlatBuffer
    return out;
  }
  out.has_header = true;
  PTERUN_CHECK(payload.size() >= kHeaderMinLength, ErrorCode::InvalidProgram, context,
               ": XH00 header cut off (", payload.size(), " bytes)");
  const uint8_t* p = payload.data();
  uint32_t length = uint32_t{p[8]} | uint32_t{p[9]} << 8;
  uint64_t fb_offset = read_u32le(p + 10);
  uint64_t fb_size = read_u32le(p + 14);
  uint64_t cd_offset = read_u32le(p + 18);
  uint64_t cd_size = read_u64le(p + 22);
  PTERUN_CHECK(length >= kHeaderMinLength && length <= payload.size(), ErrorCode::InvalidProgram,
               context, ": XH00 header length ", length, " is not in ", kHeaderMinLength, "..",
               payload.size());
  PTERUN_CHECK(fb_size >= kMinFlatbufferSize, ErrorCode::InvalidProgram, context,
               ": flatbuffer size ", fb_size, " is below the minimum ", kMinFlatbufferSize);
  PTERUN_CHECK(fb_offset >= length && fb_offset + fb_size <= payload.size(),
               ErrorCode::InvalidProgram, context, ": flatbuffer [", fb_offset, ", +", fb_size,
               ") does not lie between the ", length, "-byte header and the end of the ",
               payload.size(), "-byte payload");
  auto cd_end = checked_add(cd_offset, cd_size);
  PTERUN_CHECK(cd_offset >= fb_offset + fb_size && cd_end && *cd_end <= payload.size(),
               ErrorCode::InvalidProgram, context, ": constant data [", cd_offset, ", +", cd_size,
               ") does not lie between the flatbuffer's end ", fb_offset + fb_size,
               " and the end of the ", payload.size(), "-byte payload");
  out.flatbuffer = payload.subspan(fb_offset, fb_size);
  out.constants = payload.subspan(cd_offset, cd_size);
  return out;
}

const fb::Graph& verify(std::span<const uint8_t> flatbuffer, std::string& identifier,
                        std::string_view context) {
  // The verifier and accessors read 4- and 8-byte fields in place. Valid
  // programs keep payloads 16-byte aligned and the flatbuffer at offset 32.
  PTERUN_CHECK(reinterpret_cast<uintptr_t>(flatbuffer.data()) % kFlatbufferAlignment == 0,
               ErrorCode::InvalidProgram, context, ": the flatbuffer does not start on an ",
               kFlatbufferAlignment, "-byte boundary (a damaged header or segment offset?)");
  identifier.assign(reinterpret_cast<const char*>(flatbuffer.data()) + 4, 4);
  PTERUN_CHECK(identifier == "XN00" || identifier == "XN01", ErrorCode::InvalidProgram, context,
               ": not an XNNPACK graph (identifier is not 'XN00' or 'XN01')");
  PTERUN_CHECK(flatbuffer.size() <= kMaxFlatbufferSize, ErrorCode::InvalidProgram, context,
               ": flatbuffer of ", flatbuffer.size(), " bytes exceeds the 2 GiB limit");
  flatbuffers::Verifier::Options options;
  options.max_depth = kMaxDepth;
  options.max_tables = kMaxTables;
  flatbuffers::Verifier verifier(flatbuffer.data(), flatbuffer.size(), options);
  PTERUN_CHECK(verifier.VerifyBuffer<fb::Graph>(nullptr), ErrorCode::InvalidProgram, context,
               ": flatbuffer verification failed (the payload is damaged)");
  const fb::Graph& graph = *fb::GetGraph(flatbuffer.data());
  PTERUN_CHECK(graph.xvalues() != nullptr && graph.xnodes() != nullptr, ErrorCode::InvalidProgram,
               context, ": the graph has no ", graph.xvalues() ? "node" : "value", " list");
  return graph;
}

std::string dims_text(const std::vector<uint32_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// Where constant k's bytes come from: entry k of constant_data (payloads
/// with a header: a named-data key or the header's constant region) or of
/// the inline constant_buffer (headerless payloads), entry 0 reserved.
class ConstantSource {
 public:
  ConstantSource(const fb::Graph& graph, const PayloadLayout& layout, const NamedDataMap& named)
      : graph_(graph), layout_(layout), named_(named) {}

  std::span<const uint8_t> get(uint32_t index, uint64_t nbytes, std::string& key,
                               const std::string& what) const {
    PTERUN_CHECK(index != 0, ErrorCode::Internal, what, ": constant index 0 is reserved");
    std::span<const uint8_t> bytes =
        layout_.has_header ? from_table(index, key, what) : from_inline(index, what);
    PTERUN_CHECK(bytes.size() >= nbytes, ErrorCode::InvalidProgram, what, ": constant ", index,
                 key.empty() ? std::string() : str_cat(" ('", printable(key), "')"), " has ",
                 bytes.size(), " bytes, fewer than the ", nbytes, " it needs");
    return bytes.first(nbytes);
  }

 private:
  std::span<const uint8_t> from_table(uint32_t index, std::string& key,
                                      const std::string& what) const {
    const auto* table = graph_.constant_data();
    size_t n = table ? table->size() : 0;
    PTERUN_CHECK(index < n, ErrorCode::InvalidProgram, what, ": constant index ", index,
                 " is out of range (constant_data has ", n, " entries)");
    const fb::ConstantDataOffset* entry = table->Get(index);
    PTERUN_CHECK(entry != nullptr, ErrorCode::InvalidProgram, what, ": constant_data entry ", index,
                 " is missing");
    if (flatbuffers::IsFieldPresent(entry, fb::ConstantDataOffset::VT_NAMED_KEY)) {
      PTERUN_CHECK(entry->named_key() != nullptr, ErrorCode::InvalidProgram, what,
                   ": constant_data entry ", index, " has an unreadable named key");
      key.assign(entry->named_key()->c_str(), entry->named_key()->size());
      auto bytes = named_.find(key);
      // Without a .ptd the key may be in the one the program was exported
      // with (weights kept out of the .pte): the message says so. A damaged
      // key looks the same (a flipped hex digit is another hex digit), so
      // the error stays InvalidProgram.
      PTERUN_CHECK(bytes.has_value() || named_.has_external_data(), ErrorCode::InvalidProgram,
                   what, ": constant ", index, " names key '", printable(key),
                   "', which the program's named data lacks (no .ptd file was given: if the "
                   "program keeps its weights in one, pass it with data= when loading it)");
      PTERUN_CHECK(bytes.has_value(), ErrorCode::InvalidProgram, what, ": constant ", index,
                   " names key '", printable(key),
                   "', which neither the program's named data nor the .ptd file has");
      return *bytes;
    }
    auto end = checked_add(entry->offset(), entry->size());
    PTERUN_CHECK(end && *end <= layout_.constants.size(), ErrorCode::InvalidProgram, what,
                 ": constant ", index, " at [", entry->offset(), ", +", entry->size(),
                 ") runs past the payload's ", layout_.constants.size(), "-byte constant region");
    return layout_.constants.subspan(entry->offset(), entry->size());
  }

  std::span<const uint8_t> from_inline(uint32_t index, const std::string& what) const {
    const auto* table = graph_.constant_buffer();
    size_t n = table ? table->size() : 0;
    PTERUN_CHECK(index < n, ErrorCode::InvalidProgram, what, ": constant index ", index,
                 " is out of range (the headerless payload's constant_buffer has ", n, " entries)");
    const fb::InlineBuffer* buffer = table->Get(index);
    PTERUN_CHECK(buffer != nullptr && buffer->storage() != nullptr, ErrorCode::InvalidProgram, what,
                 ": constant_buffer entry ", index, " has no bytes");
    return {buffer->storage()->data(), buffer->storage()->size()};
  }

  const fb::Graph& graph_;
  const PayloadLayout& layout_;
  const NamedDataMap& named_;
};

std::optional<XnnDatatype> datatype_of(fb::DataType raw) {
  auto n = static_cast<int>(raw);
  if (n < 1 || n > static_cast<int>(XnnDatatype::BF16)) return std::nullopt;
  return static_cast<XnnDatatype>(n);
}

// The quantization kind each datatype must come with.
XnnQuantKind quant_kind_for(XnnDatatype type) {
  switch (type) {
    case XnnDatatype::QInt8:
    case XnnDatatype::QUInt8:
    case XnnDatatype::QInt32: return XnnQuantKind::PerTensor;
    case XnnDatatype::QCInt8:
    case XnnDatatype::QCInt32:
    case XnnDatatype::QCInt4: return XnnQuantKind::PerChannel;
    case XnnDatatype::QDInt8:
    case XnnDatatype::QPInt8: return XnnQuantKind::PerTokenDynamic;
    case XnnDatatype::QBInt4: return XnnQuantKind::PerChannelGroup;
    default: return XnnQuantKind::None;
  }
}

std::string_view quant_kind_name(XnnQuantKind kind) {
  switch (kind) {
    case XnnQuantKind::None: return "no quantization parameters";
    case XnnQuantKind::PerTensor: return "PerTensorQuant";
    case XnnQuantKind::PerChannel: return "PerChannelQuant";
    case XnnQuantKind::PerTokenDynamic: return "PerTokenDynamicQuant";
    case XnnQuantKind::PerChannelGroup: return "PerChannelGroupQuant";
  }
  return "?";
}

std::vector<float> copy_floats(const flatbuffers::Vector<float>* v) {
  return v ? std::vector<float>(v->begin(), v->end()) : std::vector<float>();
}

class GraphReader {
 public:
  GraphReader(const fb::Graph& graph, const PayloadLayout& layout, const NamedDataMap& named,
              size_t num_args, std::string_view context)
      : graph_(graph), constants_(graph, layout, named), num_args_(num_args), context_(context) {}

  void read_values(XnnGraphDesc& desc) {
    desc.num_externs = graph_.num_externs();
    PTERUN_CHECK(desc.num_externs <= kMaxExterns, ErrorCode::InvalidProgram, context_,
                 ": num_externs ", desc.num_externs, " exceeds XNNPACK's limit of ", kMaxExterns);
    const auto& values = *graph_.xvalues();
    desc.values.reserve(values.size());
    for (flatbuffers::uoffset_t i = 0; i < values.size(); ++i) {
      std::string what = str_cat(context_, ", value ", i);
      desc.values.push_back(read_value(values.Get(i), desc.num_externs, what));
      const XnnValueDesc& v = desc.values.back();
      PTERUN_CHECK(index_of_id_.emplace(v.id, static_cast<int32_t>(i)).second,
                   ErrorCode::InvalidProgram, what, ": id ", v.id, " is also value ",
                   index_of_id_[v.id], "'s");
      if (v.external_id == kXnnInvalidId) continue;
      auto [it, fresh] = value_of_external_.emplace(v.external_id, static_cast<int32_t>(i));
      PTERUN_CHECK(fresh, ErrorCode::InvalidProgram, what, ": external id ", v.external_id,
                   " is also value ", it->second, "'s");
      if (v.is_input) desc.inputs.push_back({v.external_id, static_cast<int32_t>(i)});
      if (v.is_output) desc.outputs.push_back({v.external_id, static_cast<int32_t>(i)});
    }
    auto by_id = [](const XnnExternal& a, const XnnExternal& b) {
      return a.external_id < b.external_id;
    };
    std::sort(desc.inputs.begin(), desc.inputs.end(), by_id);
    std::sort(desc.outputs.begin(), desc.outputs.end(), by_id);
  }

  void read_nodes(XnnGraphDesc& desc) {
    const auto& nodes = *graph_.xnodes();
    desc.nodes.reserve(nodes.size());
    for (flatbuffers::uoffset_t i = 0; i < nodes.size(); ++i) {
      const fb::Node* node = nodes.Get(i);
      std::string what = str_cat(context_, ", node ", i);
      PTERUN_CHECK(node != nullptr, ErrorCode::InvalidProgram, what, ": missing");
      desc.nodes.push_back(read_xnn_node(*node, desc.values, index_of_id_, what));
    }
  }

 private:
  XnnValueDesc read_value(const fb::Value* value, uint32_t num_externs, const std::string& what) {
    PTERUN_CHECK(value != nullptr, ErrorCode::InvalidProgram, what, ": missing");
    const fb::TensorValue* tensor = nullptr;
    const fb::QuantizedTensorValue* quantized = nullptr;
    switch (value->xvalue_union_type()) {
      case fb::ValueUnion_TensorValue: tensor = value->xvalue_union_as_TensorValue(); break;
      case fb::ValueUnion_QuantizedTensorValue:
        quantized = value->xvalue_union_as_QuantizedTensorValue();
        PTERUN_CHECK(quantized != nullptr, ErrorCode::InvalidProgram, what,
                     ": quantized tensor value is missing");
        tensor = quantized->tensor_value();
        break;
      case fb::ValueUnion_NONE: throw_error(ErrorCode::InvalidProgram, what + ": has no value");
      default:
        throw_error(ErrorCode::InvalidProgram,
                    str_cat(what, ": unknown value type ", int{value->xvalue_union_type()},
                            " (known: 1 tensor, 2 quantized tensor)"));
    }
    PTERUN_CHECK(tensor != nullptr, ErrorCode::InvalidProgram, what, ": tensor value is missing");

    XnnValueDesc v;
    v.id = tensor->id_out();
    PTERUN_CHECK(v.id != kXnnInvalidId, ErrorCode::InvalidProgram, what, ": id is ", kXnnInvalidId,
                 " (XNNPACK's invalid id)");
    auto type = datatype_of(tensor->datatype());
    PTERUN_CHECK(type.has_value(), ErrorCode::InvalidProgram, what, " (id ", v.id,
                 "): unknown datatype ", int{tensor->datatype()});
    v.datatype = *type;
    if (const auto* dims = tensor->dims()) v.dims.assign(dims->begin(), dims->end());
    PTERUN_CHECK(v.dims.size() <= kXnnMaxRank, ErrorCode::InvalidProgram, what, " (id ", v.id,
                 "): ", v.dims.size(), " dims, more than XNNPACK's ", kXnnMaxRank);
    PTERUN_CHECK(tensor->num_dims() == v.dims.size(), ErrorCode::InvalidProgram, what, " (id ",
                 v.id, "): num_dims ", tensor->num_dims(), " but dims has ", v.dims.size(),
                 " entries");
    auto numel = checked_numel(std::span<const uint32_t>(v.dims));
    auto nbytes = xnn_nbytes(v.datatype, v.dims);
    PTERUN_CHECK(numel && nbytes, ErrorCode::InvalidProgram, what, " (id ", v.id,
                 "): ", xnn_datatype_name(v.datatype), dims_text(v.dims), " overflows 64 bits");
    v.numel = *numel;
    v.nbytes = *nbytes;
    std::string label =
        str_cat(what, " (id ", v.id, ", ", xnn_datatype_name(v.datatype), dims_text(v.dims), ")");

    read_external(*tensor, num_externs, v, label);
    if (tensor->constant_buffer_idx() != 0) {
      PTERUN_CHECK(v.external_id == kXnnInvalidId, ErrorCode::InvalidProgram, label,
                   ": is both a constant and external value ", v.external_id);
      v.is_constant = true;
      v.data = constants_.get(tensor->constant_buffer_idx(), v.nbytes, v.constant_key, label);
    }
    read_quant(quantized, v, label);
    read_dq_datatype(*tensor, quantized != nullptr, v, label);
    return v;
  }

  void read_external(const fb::TensorValue& tensor, uint32_t num_externs, XnnValueDesc& v,
                     const std::string& label) {
    uint32_t flags = tensor.flags();
    PTERUN_CHECK((flags & ~(kFlagExternalInput | kFlagExternalOutput)) == 0,
                 ErrorCode::InvalidProgram, label, ": flags ", flags,
                 " has unknown bits (known: 1 external input, 2 external output)");
    v.external_id = tensor.external_id();
    v.is_input = (flags & kFlagExternalInput) != 0;
    v.is_output = (flags & kFlagExternalOutput) != 0;
    bool external = v.external_id != kXnnInvalidId;
    PTERUN_CHECK(external == (flags != 0), ErrorCode::InvalidProgram, label,
                 external ? str_cat(": has external id ", v.external_id,
                                    " but is flagged neither input nor output")
                          : std::string(": is flagged external but has no external id"));
    if (!external) return;
    PTERUN_CHECK(v.external_id < num_externs, ErrorCode::InvalidProgram, label, ": external id ",
                 v.external_id, " is out of range (num_externs ", num_externs, ")");
    PTERUN_CHECK(v.external_id < num_args_, ErrorCode::InvalidProgram, label, ": external id ",
                 v.external_id, " is out of range (the delegate call passes ", num_args_,
                 " arguments)");
  }

  void read_quant(const fb::QuantizedTensorValue* quantized, XnnValueDesc& v,
                  const std::string& label) {
    XnnQuantParams& q = v.quant;
    if (quantized != nullptr) {
      switch (quantized->quant_params_type()) {
        case fb::QuantParams_PerTensorQuant: {
          const auto* p = quantized->quant_params_as_PerTensorQuant();
          PTERUN_CHECK(p != nullptr, ErrorCode::InvalidProgram, label, ": missing PerTensorQuant");
          q.kind = XnnQuantKind::PerTensor;
          q.scale = p->scale();
          q.zero_point = p->zero_point();
          break;
        }
        case fb::QuantParams_PerChannelQuant:
          read_per_channel(quantized->quant_params_as_PerChannelQuant(), v, label);
          break;
        case fb::QuantParams_PerTokenDynamicQuant: {
          const auto* p = quantized->quant_params_as_PerTokenDynamicQuant();
          PTERUN_CHECK(p != nullptr, ErrorCode::InvalidProgram, label,
                       ": missing PerTokenDynamicQuant");
          q.kind = XnnQuantKind::PerTokenDynamic;
          PTERUN_CHECK(p->num_nonbatch_dims() >= 0 &&
                           static_cast<size_t>(p->num_nonbatch_dims()) <= v.dims.size(),
                       ErrorCode::InvalidProgram, label, ": num_nonbatch_dims ",
                       p->num_nonbatch_dims(), " is not in 0..", v.dims.size());
          q.num_nonbatch_dims = static_cast<uint32_t>(p->num_nonbatch_dims());
          PTERUN_CHECK(!v.is_constant, ErrorCode::InvalidProgram, label,
                       ": a value quantized at run time cannot be a constant");
          break;
        }
        case fb::QuantParams_PerChannelGroupQuant:
          read_per_channel_group(quantized->quant_params_as_PerChannelGroupQuant(), v, label);
          break;
        case fb::QuantParams_NONE:
          throw_error(ErrorCode::InvalidProgram, label + ": quantized value without parameters");
        default:
          throw_error(ErrorCode::InvalidProgram,
                      str_cat(label, ": unknown quantization kind ",
                              int{quantized->quant_params_type()}, " (known: 1..4)"));
      }
    }
    XnnQuantKind expected = quant_kind_for(v.datatype);
    PTERUN_CHECK(q.kind == expected, ErrorCode::InvalidProgram, label, ": datatype ",
                 xnn_datatype_name(v.datatype), " needs ", quant_kind_name(expected), ", not ",
                 quant_kind_name(q.kind));
  }

  // Scales: num_scales entries of `scale_size` bytes from constant
  // scale_buffer_idx, or the inline fp32 list.
  void read_scales(uint32_t scale_buffer_idx, uint32_t num_scales,
                   const flatbuffers::Vector<float>* inline_scales, uint64_t expected,
                   uint64_t scale_size, XnnValueDesc& v, const std::string& label) {
    XnnQuantParams& q = v.quant;
    if (scale_buffer_idx != 0) {
      PTERUN_CHECK(num_scales == expected, ErrorCode::InvalidProgram, label, ": num_scales ",
                   num_scales, " but the dims call for ", expected);
      q.num_scales = num_scales;
      q.scale_data = constants_.get(scale_buffer_idx, uint64_t{num_scales} * scale_size,
                                    q.scale_key, label + " scales");
      return;
    }
    q.inline_scales = copy_floats(inline_scales);
    PTERUN_CHECK(q.inline_scales.size() == expected, ErrorCode::InvalidProgram, label, ": ",
                 q.inline_scales.size(), " inline scales but the dims call for ", expected);
    q.num_scales = static_cast<uint32_t>(expected);
  }

  void read_per_channel(const fb::PerChannelQuant* p, XnnValueDesc& v, const std::string& label) {
    PTERUN_CHECK(p != nullptr, ErrorCode::InvalidProgram, label, ": missing PerChannelQuant");
    XnnQuantParams& q = v.quant;
    q.kind = XnnQuantKind::PerChannel;
    PTERUN_CHECK(p->channel_dim() >= 0 && static_cast<size_t>(p->channel_dim()) < v.dims.size(),
                 ErrorCode::InvalidProgram, label, ": channel_dim ", p->channel_dim(),
                 " is not a dim of the ", v.dims.size(), "-d value");
    q.channel_dim = static_cast<uint32_t>(p->channel_dim());
    read_scales(p->scale_buffer_idx(), p->num_scales(), p->scale(), v.dims[q.channel_dim],
                sizeof(float), v, label);
  }

  void read_per_channel_group(const fb::PerChannelGroupQuant* p, XnnValueDesc& v,
                              const std::string& label) {
    PTERUN_CHECK(p != nullptr, ErrorCode::InvalidProgram, label, ": missing PerChannelGroupQuant");
    XnnQuantParams& q = v.quant;
    q.kind = XnnQuantKind::PerChannelGroup;
    PTERUN_CHECK(v.dims.size() == 2, ErrorCode::InvalidProgram, label,
                 ": blockwise quantization needs a 2-d [out, in] value");
    PTERUN_CHECK(p->channel_dim() >= 0 && p->channel_dim() < 2, ErrorCode::InvalidProgram, label,
                 ": channel_dim ", p->channel_dim(), " is not a dim of the 2-d value");
    q.channel_dim = static_cast<uint32_t>(p->channel_dim());
    uint32_t in = v.dims[1];
    PTERUN_CHECK(p->group_size() > 0 && in % static_cast<uint32_t>(p->group_size()) == 0,
                 ErrorCode::InvalidProgram, label, ": group_size ", p->group_size(),
                 " does not divide the ", in, " input channels");
    q.group_size = static_cast<uint32_t>(p->group_size());
    // Both factors are uint32, so the product fits.
    uint64_t expected = uint64_t{v.dims[0]} * (in / q.group_size);
    read_scales(p->scale_buffer_idx(), p->num_scales(), p->scale(), expected, 2, v, label);
  }

  void read_dq_datatype(const fb::TensorValue& tensor, bool quantized, XnnValueDesc& v,
                        const std::string& label) {
    if (tensor.dq_datatype() == fb::DataType_invalid) return;
    auto dq = datatype_of(tensor.dq_datatype());
    PTERUN_CHECK(dq == XnnDatatype::QInt8, ErrorCode::InvalidProgram, label, ": dq_datatype ",
                 int{tensor.dq_datatype()}, " (only qint8 is defined)");
    PTERUN_CHECK(v.is_input && !quantized && !v.is_constant, ErrorCode::InvalidProgram, label,
                 ": dq_datatype is only allowed on a float external input");
    v.dq_datatype = dq;
  }

  const fb::Graph& graph_;
  ConstantSource constants_;
  size_t num_args_;
  std::string context_;
  std::unordered_map<uint32_t, int32_t> index_of_id_;
  std::unordered_map<uint32_t, int32_t> value_of_external_;
};

// Every node reads values that exist by then (constants, external inputs,
// earlier nodes' outputs) and writes values nobody else writes; every
// external output gets written.
void check_data_flow(const XnnGraphDesc& desc, std::string_view context) {
  std::vector<int32_t> writer(desc.values.size(), -1);
  auto name = [&](size_t node) {
    return str_cat(context, ", node ", node, " (", xnn_node_type_name(desc.nodes[node].type), ")");
  };
  for (size_t n = 0; n < desc.nodes.size(); ++n) {
    for (int32_t in : desc.nodes[n].inputs) {
      if (in == kXnnNoValue) continue;
      const XnnValueDesc& v = desc.values[in];
      PTERUN_CHECK(v.is_constant || v.is_input || writer[in] >= 0, ErrorCode::InvalidProgram,
                   name(n), ": reads value ", in, " (id ", v.id,
                   "), which is no constant, no input and no earlier node's output");
    }
    for (int32_t out : desc.nodes[n].outputs) {
      const XnnValueDesc& v = desc.values[out];
      PTERUN_CHECK(!v.is_constant && !v.is_input, ErrorCode::InvalidProgram, name(n),
                   ": writes value ", out, " (id ", v.id, "), which is ",
                   v.is_constant ? "a constant" : "an external input");
      PTERUN_CHECK(writer[out] < 0, ErrorCode::InvalidProgram, name(n), ": writes value ", out,
                   " (id ", v.id, "), which node ", writer[out], " writes too");
      writer[out] = static_cast<int32_t>(n);
    }
  }
  for (const XnnExternal& e : desc.outputs) {
    const XnnValueDesc& v = desc.values[e.value];
    PTERUN_CHECK(v.is_input || writer[e.value] >= 0, ErrorCode::InvalidProgram, context,
                 ": external output ", e.external_id, " (value ", e.value,
                 ") is written by no node");
  }
}

}  // namespace

std::string_view xnn_datatype_name(XnnDatatype type) {
  static constexpr std::string_view kNames[] = {"invalid", "fp32",   "fp16",    "qint8",  "quint8",
                                                "qint32",  "qcint8", "qcint32", "qcint4", "qdint8",
                                                "qbint4",  "qpint8", "int32",   "pfp32",  "bf16"};
  auto i = static_cast<size_t>(type);
  return i < std::size(kNames) ? kNames[i] : "invalid";
}

std::optional<uint64_t> xnn_nbytes(XnnDatatype type, std::span<const uint32_t> dims) {
  if (type == XnnDatatype::QCInt4 || type == XnnDatatype::QBInt4) {
    // Two per byte along the last dim, each row padded to whole bytes.
    uint64_t last = dims.empty() ? 1 : dims.back();
    auto rows = checked_numel(dims.empty() ? dims : dims.first(dims.size() - 1));
    return rows ? checked_mul(*rows, (last + 1) / 2) : std::nullopt;
  }
  uint64_t size = 4;
  switch (type) {
    case XnnDatatype::Fp16:
    case XnnDatatype::BF16: size = 2; break;
    case XnnDatatype::QInt8:
    case XnnDatatype::QUInt8:
    case XnnDatatype::QCInt8:
    case XnnDatatype::QDInt8:
    case XnnDatatype::QPInt8: size = 1; break;
    default: break;
  }
  auto numel = checked_numel(dims);
  return numel ? checked_mul(*numel, size) : std::nullopt;
}

std::vector<size_t> XnnGraphDesc::node_counts() const {
  std::vector<size_t> counts(kXnnMaxNodeType + 1, 0);
  for (const auto& n : nodes) ++counts[static_cast<size_t>(n.type)];
  return counts;
}

size_t XnnGraphDesc::num_constants() const {
  return static_cast<size_t>(
      std::count_if(values.begin(), values.end(), [](const auto& v) { return v.is_constant; }));
}

uint64_t XnnGraphDesc::constant_bytes() const {
  uint64_t n = 0;
  for (const auto& v : values) n += v.data.size() + v.quant.scale_data.size();
  return n;
}

XnnGraphDesc read_xnnpack_graph(std::span<const uint8_t> payload, const NamedDataMap& named_data,
                                size_t num_args, std::string_view context) {
  XnnGraphDesc desc;
  PayloadLayout layout = locate(payload, context);
  desc.has_header = layout.has_header;
  const fb::Graph& graph = verify(layout.flatbuffer, desc.identifier, context);
  if (graph.version()) desc.version.assign(graph.version()->c_str(), graph.version()->size());
  GraphReader reader(graph, layout, named_data, num_args, context);
  reader.read_values(desc);
  reader.read_nodes(desc);
  check_data_flow(desc, context);
  return desc;
}

std::optional<size_t> delegate_call_num_args(const MethodDesc& method, size_t delegate_index) {
  std::optional<size_t> count;
  for (const auto& chain : method.chains) {
    for (const auto& instr : chain.instructions) {
      if (instr.kind != InstructionKind::DelegateCall ||
          static_cast<size_t>(instr.index) != delegate_index) {
        continue;
      }
      PTERUN_CHECK(!count || *count == instr.args.size(), ErrorCode::InvalidProgram, "method '",
                   printable(method.name), "', delegate ", delegate_index, ": called with ", *count,
                   " and with ", instr.args.size(), " arguments");
      count = instr.args.size();
    }
  }
  return count;
}

XnnGraphDesc read_xnnpack_delegate(const MethodDesc& method, size_t delegate_index,
                                   const NamedDataMap& named_data) {
  PTERUN_CHECK(delegate_index < method.delegates.size(), ErrorCode::InvalidArgument, "method '",
               printable(method.name), "': no delegate ", delegate_index, " (it has ",
               method.delegates.size(), ")");
  const DelegateDesc& d = method.delegates[delegate_index];
  std::string context = str_cat("method '", printable(method.name), "', delegate ", delegate_index,
                                " (", printable(d.id), ")");
  PTERUN_CHECK(d.id == kXnnpackBackendId, ErrorCode::InvalidArgument, context,
               ": not an XNNPACK delegate");
  auto num_args = delegate_call_num_args(method, delegate_index);
  PTERUN_CHECK(num_args.has_value(), ErrorCode::InvalidProgram, context,
               ": no instruction calls it");
  return read_xnnpack_graph(d.payload, named_data, *num_args, context);
}

}  // namespace pterun::format
