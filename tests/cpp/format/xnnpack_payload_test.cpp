// The XNNPACK payload reader on hand-built payloads: a small valid graph
// (y = x + w, w a named constant) and copies of it with one defect each,
// every one refused with InvalidProgram and a message naming the value or
// node and the field; plus the older forms (headerless with inline
// constants, XN00 with dq_datatype) and the node types ExecuTorch's runtime
// does not run, which must still be representable.

#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "pterun/core/error.h"
#include "pterun/format/schema/xnnpack_generated.h"
#include "pterun/format/xnnpack_reader.h"

namespace pterun::format {
namespace {

namespace fb = pterun_fb::xnn;

// Knobs of the test graph: values x (external input), w (constant), y
// (external output) with ids 0, 1, 2; one node y = op(x, w).
struct Spec {
  bool header = true;
  const char* identifier = "XN01";
  uint32_t num_externs = 2;
  uint32_t x_external = 0;
  uint32_t x_flags = 1;
  uint32_t y_external = 1;
  fb::DataType w_type = fb::DataType_fp32;
  std::vector<uint32_t> w_dims = {2, 3};
  uint32_t w_constant = 1;
  const char* w_key = "w";
  bool legacy_inline = false;  // w's bytes in constant_buffer (headerless form)
  uint32_t y_id = 2;
  uint8_t node_type = fb::NodeUnion_Add;
  uint32_t input1 = 0, input2 = 1, output = 2;
  std::optional<std::pair<float, float>> clamp;
  fb::DataType x_dq = fb::DataType_invalid;
  bool y_quantized = false;  // y as qint8 (needs PerTensorQuant)
  bool y_per_tensor = true;  // ...and has it
  // Header overrides (0 keeps the computed value).
  uint32_t header_length = 30, fb_offset = 0, cd_offset = 0;
  uint64_t cd_size = 0;
};

std::vector<uint8_t> build(const Spec& s) {
  flatbuffers::FlatBufferBuilder b;
  auto tensor = [&](fb::DataType type, const std::vector<uint32_t>& dims, uint32_t constant,
                    uint32_t external, uint32_t flags, uint32_t id, fb::DataType dq) {
    return fb::CreateTensorValueDirect(b, type, static_cast<uint32_t>(dims.size()), &dims, constant,
                                       external, flags, id, dq);
  };
  std::vector<flatbuffers::Offset<fb::Value>> values;
  auto x = tensor(fb::DataType_fp32, {2, 3}, 0, s.x_external, s.x_flags, 0, s.x_dq);
  values.push_back(fb::CreateValue(b, fb::ValueUnion_TensorValue, x.Union()));
  auto w = tensor(s.w_type, s.w_dims, s.w_constant, kXnnInvalidId, 0, 1, fb::DataType_invalid);
  values.push_back(fb::CreateValue(b, fb::ValueUnion_TensorValue, w.Union()));
  if (s.y_quantized) {
    auto y = tensor(fb::DataType_qint8, {2, 3}, 0, s.y_external, 2, s.y_id, fb::DataType_invalid);
    auto q = s.y_per_tensor ? fb::CreatePerTensorQuant(b, 0.5f, 3).Union() : 0;
    auto qt = fb::CreateQuantizedTensorValue(
        b, y, s.y_per_tensor ? fb::QuantParams_PerTensorQuant : fb::QuantParams_NONE, q);
    values.push_back(fb::CreateValue(b, fb::ValueUnion_QuantizedTensorValue, qt.Union()));
  } else {
    auto y = tensor(fb::DataType_fp32, {2, 3}, 0, s.y_external, 2, s.y_id, fb::DataType_invalid);
    values.push_back(fb::CreateValue(b, fb::ValueUnion_TensorValue, y.Union()));
  }

  flatbuffers::Offset<void> table;
  if (s.node_type == fb::NodeUnion_ScaledDotProductAttention) {
    table = fb::CreateScaledDotProductAttention(b, s.input1, s.input1, s.input1, s.input2,
                                                kXnnInvalidId, s.output, 0)
                .Union();
  } else if (s.node_type == fb::NodeUnion_ELU) {
    table = fb::CreateELU(b, 1.5f, s.input1, s.output, 0).Union();
  } else {
    table = fb::CreateBinaryNode(b, s.input1, s.input2, s.output, 0).Union();
  }
  auto clamp = s.clamp ? fb::CreateOutputMinMax(b, s.clamp->first, s.clamp->second) : 0;
  std::vector<flatbuffers::Offset<fb::Node>> nodes = {
      fb::CreateNode(b, static_cast<fb::NodeUnion>(s.node_type), table, 7, clamp)};

  std::vector<flatbuffers::Offset<fb::ConstantDataOffset>> constant_data;
  std::vector<flatbuffers::Offset<fb::InlineBuffer>> constant_buffer;
  if (s.legacy_inline) {
    std::vector<uint8_t> bytes(24, 0x11);
    constant_buffer.push_back(fb::CreateInlineBufferDirect(b, nullptr));
    constant_buffer.push_back(fb::CreateInlineBufferDirect(b, &bytes));
  } else {
    constant_data.push_back(fb::CreateConstantDataOffsetDirect(b, 0, 0, nullptr));
    constant_data.push_back(fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, 24, s.w_key));
  }
  auto graph = fb::CreateGraphDirect(b, "0", &nodes, &values, s.num_externs, nullptr, nullptr,
                                     s.legacy_inline ? &constant_buffer : nullptr, nullptr,
                                     s.legacy_inline ? nullptr : &constant_data);
  b.Finish(graph, s.identifier);
  std::vector<uint8_t> flatbuffer(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  if (!s.header) return flatbuffer;

  // 4 zero bytes, XH00, u16 length, u32 fb offset, u32 fb size, u32
  // constant offset, u64 constant size; the flatbuffer at 32.
  size_t padded = (flatbuffer.size() + 15) / 16 * 16;
  std::vector<uint8_t> out(32 + padded, 0);
  auto put = [&](size_t at, uint64_t v, size_t width) {
    for (size_t i = 0; i < width; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  std::memcpy(out.data() + 4, "XH00", 4);
  put(8, s.header_length, 2);
  put(10, s.fb_offset ? s.fb_offset : 32, 4);
  put(14, flatbuffer.size(), 4);
  put(18, s.cd_offset ? s.cd_offset : 32 + padded, 4);
  put(22, s.cd_size, 8);
  std::copy(flatbuffer.begin(), flatbuffer.end(), out.begin() + 32);
  return out;
}

class XnnpackPayload : public ::testing::Test {
 protected:
  XnnpackPayload() {
    program_.named_data.push_back({"w", weights_});
    named_ = std::make_unique<NamedDataMap>(program_);
  }

  // The result's spans may point into the payload: it stays in payload_.
  XnnGraphDesc read(const Spec& s, size_t num_args = 2) {
    payload_ = build(s);
    return read_xnnpack_graph(payload_, *named_, num_args, "test payload");
  }

  // "" when `s` reads; otherwise the error's code name and message.
  std::string error_of(const Spec& s, size_t num_args = 2) {
    try {
      read(s, num_args);
    } catch (const Error& e) {
      return str_cat(error_code_name(e.code()), ": ", e.what());
    }
    return "";
  }

  std::vector<uint8_t> weights_ = std::vector<uint8_t>(24, 0x22);
  std::vector<uint8_t> payload_;
  ProgramDesc program_;
  std::unique_ptr<NamedDataMap> named_;
};

TEST_F(XnnpackPayload, ValidGraphReads) {
  XnnGraphDesc g = read(Spec{});
  EXPECT_TRUE(g.has_header);
  EXPECT_EQ(g.identifier, "XN01");
  EXPECT_EQ(g.version, "0");
  ASSERT_EQ(g.values.size(), 3u);
  EXPECT_TRUE(g.values[1].is_constant);
  EXPECT_EQ(g.values[1].constant_key, "w");
  EXPECT_EQ(g.values[1].data.data(), weights_.data());
  EXPECT_EQ(g.values[1].data.size(), 24u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].type, XnnNodeType::Add);
  EXPECT_EQ(g.nodes[0].debug_handle, 7u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<int32_t>{2}));
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].value, 0);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].external_id, 1u);
  EXPECT_EQ(g.outputs[0].value, 2);
}

TEST_F(XnnpackPayload, NodesNameValuesByTheirSerializedIds) {
  Spec s;
  s.y_id = 40;  // ids need not be list positions
  s.output = 40;
  XnnGraphDesc g = read(s);
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<int32_t>{2}));
  EXPECT_EQ(g.values[2].id, 40u);
}

TEST_F(XnnpackPayload, EachDefectIsNamed) {
  struct Case {
    const char* what;
    Spec spec;
    size_t num_args;
    const char* message;
  };
  auto with = [](auto edit) {
    Spec s;
    edit(s);
    return s;
  };
  std::vector<Case> cases = {
      {"id beyond the value table", with([](Spec& s) { s.input2 = 7; }), 2,
       "node 0 (Add): input2_id 7 names no value"},
      {"unset required id", with([](Spec& s) { s.input1 = kXnnInvalidId; }), 2,
       "node 0 (Add): input1_id is unset"},
      {"external id beyond the call's args", with([](Spec& s) {
         s.num_externs = 8;
         s.x_external = 5;
       }),
       2, "value 0 (id 0, fp32[2, 3]): external id 5 is out of range (the delegate call passes 2"},
      {"external id beyond num_externs", with([](Spec& s) { s.y_external = 2; }), 4,
       "external id 2 is out of range (num_externs 2)"},
      {"two values with one external id", with([](Spec& s) { s.y_external = 0; }), 2,
       "value 2: external id 0 is also value 0's"},
      {"flags without an external id", with([](Spec& s) { s.x_external = kXnnInvalidId; }), 2,
       "is flagged external but has no external id"},
      {"unknown flag bits", with([](Spec& s) { s.x_flags = 5; }), 2,
       "value 0 (id 0, fp32[2, 3]): flags 5 has unknown bits"},
      {"constant shorter than dims x element size", with([](Spec& s) {
         s.w_dims = {4, 3};
       }),
       2, "constant 1 ('w') has 24 bytes, fewer than the 48 it needs"},
      {"constant index beyond constant_data", with([](Spec& s) { s.w_constant = 9; }), 2,
       "constant index 9 is out of range (constant_data has 2 entries)"},
      {"size that overflows", with([](Spec& s) {
         s.w_dims = {1u << 16, 1u << 16, 1u << 16, 1u << 16, 1u << 16};
       }),
       2, "value 1 (id 1): fp32[65536, 65536, 65536, 65536, 65536] overflows 64 bits"},
      {"rank above XNNPACK's limit", with([](Spec& s) { s.w_dims = {1, 1, 1, 1, 1, 1, 1}; }), 2,
       "7 dims, more than XNNPACK's 6"},
      {"unknown datatype", with([](Spec& s) { s.w_type = static_cast<fb::DataType>(15); }), 2,
       "value 1 (id 1): unknown datatype 15"},
      {"datatype 0", with([](Spec& s) { s.w_type = fb::DataType_invalid; }), 2,
       "unknown datatype 0"},
      {"quantized datatype without parameters",
       with([](Spec& s) { s.w_type = fb::DataType_qint8; }), 2,
       "datatype qint8 needs PerTensorQuant, not no quantization parameters"},
      {"quantized value whose parameters are missing", with([](Spec& s) {
         s.y_quantized = true;
         s.y_per_tensor = false;
       }),
       2, "quantized value without parameters"},
      {"unknown node type", with([](Spec& s) { s.node_type = 48; }), 2,
       "node 0: unknown node type 48 (this reader knows 1..47)"},
      {"node without a type", with([](Spec& s) { s.node_type = 0; }), 2,
       "node 0: has no node type"},
      {"node writing a constant", with([](Spec& s) { s.output = 1; }), 2,
       "node 0 (Add): writes value 1 (id 1), which is a constant"},
      {"node reading an unwritten value", with([](Spec& s) { s.input2 = 2; }), 2,
       "node 0 (Add): reads value 2 (id 2), which is no constant, no input and no earlier"},
      {"duplicate ids", with([](Spec& s) { s.y_id = 1; }), 2, "value 2: id 1 is also value 1's"},
      {"inverted clamp", with([](Spec& s) {
         s.clamp = std::pair{6.0f, 0.0f};
       }),
       2, "output_min 6 is not at most output_max 0"},
      {"identifier", with([](Spec& s) { s.identifier = "XZ01"; }), 2,
       "not an XNNPACK graph (identifier is not 'XN00' or 'XN01')"},
      {"dq_datatype on an output", with([](Spec& s) {
         s.x_dq = fb::DataType_qint8;
         s.x_flags = 2;
         s.x_external = 1;
         s.y_external = 0;
       }),
       2, "dq_datatype is only allowed on a float external input"},
      {"unknown dq_datatype", with([](Spec& s) { s.x_dq = fb::DataType_qcint4; }), 2,
       "dq_datatype 8 (only qint8 is defined)"},
      {"header length below 30", with([](Spec& s) { s.header_length = 12; }), 2,
       "XH00 header length 12 is not in 30.."},
      {"flatbuffer inside the header", with([](Spec& s) { s.fb_offset = 16; }), 2,
       "flatbuffer [16, +"},
      {"flatbuffer past the end", with([](Spec& s) { s.fb_offset = 4096; }), 2,
       "flatbuffer [4096, +"},
      {"constant region overlapping the flatbuffer", with([](Spec& s) { s.cd_offset = 40; }), 2,
       "constant data [40, +0) does not lie between the flatbuffer's end"},
      {"flatbuffer off its alignment", with([](Spec& s) { s.fb_offset = 31; }), 2,
       "the flatbuffer does not start on an 8-byte boundary"},
      {"constant region past the end", with([](Spec& s) { s.cd_size = ~uint64_t{0}; }), 2,
       "constant data ["},
  };
  for (const Case& c : cases) {
    std::string err = error_of(c.spec, c.num_args);
    EXPECT_NE(err.find(std::string("InvalidProgram: test payload")), std::string::npos)
        << c.what << ": " << err;
    EXPECT_NE(err.find(c.message), std::string::npos) << c.what << ": " << err;
  }
}

// A key the named data lacks: InvalidProgram (a damaged key and one in a
// .ptd that was not given look the same); without a .ptd the message says
// to pass one.
TEST_F(XnnpackPayload, MissingNamedKeys) {
  Spec s;
  s.w_key = "nope";
  std::string err = error_of(s);
  EXPECT_NE(err.find("InvalidProgram: test payload, value 1 (id 1, fp32[2, 3]): constant 1 "
                     "names key 'nope', which the program's named data lacks"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("pass it with data="), std::string::npos) << err;

  ExternalData ptd;
  ptd.entries.push_back({"other", weights_, std::nullopt});
  named_ = std::make_unique<NamedDataMap>(program_, &ptd);
  err = error_of(s);
  EXPECT_NE(err.find("InvalidProgram: test payload, value 1 (id 1, fp32[2, 3]): constant 1 names "
                     "key 'nope', which neither"),
            std::string::npos)
      << err;
  s.w_key = "w\xff\n";
  err = error_of(s);
  EXPECT_NE(err.find("constant 1 names key 'w\\xff\\x0a', which neither"), std::string::npos)
      << err;
  s.w_key = "other";  // found in the .ptd: read
  EXPECT_EQ(error_of(s), "");
}

TEST_F(XnnpackPayload, ShortPayloadsAreRefused) {
  for (size_t n : {0, 4, 7, 8, 29}) {
    std::vector<uint8_t> bytes(n, 0);
    if (n >= 8) std::memcpy(bytes.data() + 4, "XH00", 4);
    try {
      read_xnnpack_graph(bytes, *named_, 2);
      ADD_FAILURE() << n << " bytes read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidProgram) << n;
    }
  }
}

TEST_F(XnnpackPayload, HeaderlessPayloadWithInlineConstants) {
  Spec s;
  s.header = false;
  s.legacy_inline = true;
  XnnGraphDesc g = read(s);
  EXPECT_FALSE(g.has_header);
  EXPECT_TRUE(g.values[1].is_constant);
  EXPECT_TRUE(g.values[1].constant_key.empty());
  ASSERT_EQ(g.values[1].data.size(), 24u);
  EXPECT_EQ(g.values[1].data[0], 0x11);
  // A headerless payload has no named-data table to use.
  s.legacy_inline = false;
  EXPECT_NE(error_of(s).find("constant index 1 is out of range (the headerless payload's "
                             "constant_buffer has 0 entries)"),
            std::string::npos);
}

TEST_F(XnnpackPayload, OlderIdentifierAndDynamicQuantizationOfAnInput) {
  Spec s;
  s.identifier = "XN00";
  s.x_dq = fb::DataType_qint8;
  XnnGraphDesc g = read(s);
  EXPECT_EQ(g.identifier, "XN00");
  EXPECT_EQ(g.values[0].dq_datatype, XnnDatatype::QInt8);
  EXPECT_FALSE(g.values[2].dq_datatype.has_value());
}

TEST_F(XnnpackPayload, QuantizedValueKeepsItsParameters) {
  Spec s;
  s.y_quantized = true;
  XnnGraphDesc g = read(s);
  EXPECT_EQ(g.values[2].datatype, XnnDatatype::QInt8);
  EXPECT_EQ(g.values[2].quant.kind, XnnQuantKind::PerTensor);
  EXPECT_EQ(g.values[2].quant.scale, 0.5f);
  EXPECT_EQ(g.values[2].quant.zero_point, 3);
  EXPECT_EQ(g.values[2].nbytes, 6u);
}

TEST_F(XnnpackPayload, NodeTypesTheRuntimeDoesNotRunAreRepresentable) {
  Spec s;
  s.node_type = fb::NodeUnion_ScaledDotProductAttention;
  XnnGraphDesc g = read(s);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].type, XnnNodeType::ScaledDotProductAttention);
  EXPECT_EQ(xnn_node_type_name(g.nodes[0].type), "ScaledDotProductAttention");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<int32_t>{0, 0, 0, 1, kXnnNoValue}));

  s.node_type = fb::NodeUnion_ELU;
  g = read(s);
  EXPECT_EQ(g.nodes[0].type, XnnNodeType::ELU);
  EXPECT_EQ(std::get<XnnScalarParams>(g.nodes[0].params).value, 1.5f);
}

TEST(XnnpackSizes, FourBitTypesPackTwoPerByteAlongTheLastDim) {
  std::vector<uint32_t> dims = {3, 5};
  EXPECT_EQ(xnn_nbytes(XnnDatatype::QCInt4, dims), 9u);
  EXPECT_EQ(xnn_nbytes(XnnDatatype::QBInt4, dims), 9u);
  EXPECT_EQ(xnn_nbytes(XnnDatatype::Fp16, dims), 30u);
  EXPECT_EQ(xnn_nbytes(XnnDatatype::QInt32, dims), 60u);
  EXPECT_EQ(xnn_nbytes(XnnDatatype::QCInt4, std::vector<uint32_t>{}), 1u);
  std::vector<uint32_t> huge = {0xffffffff, 0xffffffff, 0xffffffff};
  EXPECT_FALSE(xnn_nbytes(XnnDatatype::Fp32, huge).has_value());
}

}  // namespace
}  // namespace pterun::format
