// Dynamically quantized XNNPACK layers on a hand-built payload: a Convert
// to qdint8 and the FullyConnected reading it become one
// xnnpack::fully_connected_dq call on the float input, with the filter
// (copied), its scales and block sums as constants; a bad scale is an
// InvalidProgram at load; a qdint8 value read by another node type keeps
// the delegate, with the reason.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "pterun/core/error.h"
#include "pterun/delegates/expand.h"
#include "pterun/format/schema/xnnpack_generated.h"
#include "pterun/format/xnnpack_reader.h"
#include "tests/cpp/delegates/payload_util.h"
#include "tests/cpp/test_util.h"

namespace pterun::delegates {
namespace {

namespace fb = pterun_fb::xnn;
using format::InstructionKind;
using format::kXnnInvalidId;

constexpr int8_t kWeights[9] = {1, -2, 3, 4, 5, -6, -7, 8, 9};

// y[2, 3] = FullyConnected(Convert(x[2, 3]) as qdint8, w [3, 3] of
// `filter_type` quantized as `params` makes it (its bytes from named key
// "w", `filter_bytes` of them; scales in named data from key "s",
// `scale_bytes` of them, at constant 2); with `second_reader`, t is also
// read by an Add writing y.
using QuantParamsFn = flatbuffers::Offset<void> (*)(flatbuffers::FlatBufferBuilder&, const void*);

std::vector<uint8_t> dq_payload(fb::DataType filter_type, fb::QuantParams kind,
                                QuantParamsFn params, const void* params_arg, uint64_t filter_bytes,
                                uint64_t scale_bytes, bool second_reader = false) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<uint32_t> dims = {2, 3}, wdims = {3, 3};
  auto plain = [&](uint32_t external, uint32_t flags, uint32_t id) {
    auto t = fb::CreateTensorValueDirect(b, fb::DataType_fp32, 2, &dims, 0, external, flags, id);
    return fb::CreateValue(b, fb::ValueUnion_TensorValue, t.Union());
  };
  auto quantized = [&](flatbuffers::Offset<fb::TensorValue> t, fb::QuantParams k,
                       flatbuffers::Offset<void> p) {
    auto qt = fb::CreateQuantizedTensorValue(b, t, k, p);
    return fb::CreateValue(b, fb::ValueUnion_QuantizedTensorValue, qt.Union());
  };
  auto t = fb::CreateTensorValueDirect(b, fb::DataType_qdint8, 2, &dims, 0, kXnnInvalidId, 0, 1);
  auto w = fb::CreateTensorValueDirect(b, filter_type, 2, &wdims, 1, kXnnInvalidId, 0, 2);
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      plain(0, 1, 0),
      quantized(t, fb::QuantParams_PerTokenDynamicQuant,
                fb::CreatePerTokenDynamicQuant(b, 1).Union()),
      quantized(w, kind, params(b, params_arg)), plain(1, 2, 3)};
  std::vector<flatbuffers::Offset<fb::Node>> nodes = {
      fb::CreateNode(b, fb::NodeUnion_Convert, fb::CreateUnaryNode(b, 0, 1, 0).Union(), 1),
      second_reader
          ? fb::CreateNode(b, fb::NodeUnion_Add, fb::CreateBinaryNode(b, 1, 1, 3, 0).Union(), 2)
          : fb::CreateNode(b, fb::NodeUnion_FullyConnected,
                           fb::CreateFullyConnected(b, 1, 2, kXnnInvalidId, 3, 0).Union(), 2)};
  std::vector<flatbuffers::Offset<fb::ConstantDataOffset>> constants = {
      fb::CreateConstantDataOffsetDirect(b, 0, 0, nullptr),
      fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, filter_bytes, "w"),
      fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, scale_bytes, "s")};
  b.Finish(fb::CreateGraphDirect(b, "0", &nodes, &values, 2, nullptr, nullptr, nullptr, nullptr,
                                 &constants),
           "XN01");
  return xnn_test::with_header(b);
}

// The filter qcint8, one float32 scale per output channel.
std::vector<uint8_t> payload(bool second_reader = false) {
  auto per_channel = [](flatbuffers::FlatBufferBuilder& b, const void*) {
    return fb::CreatePerChannelQuant(b, 0, 0, 2, 3).Union();
  };
  return dq_payload(fb::DataType_qcint8, fb::QuantParams_PerChannelQuant, per_channel, nullptr, 9,
                    12, second_reader);
}

// The filter qbint4 in blocks of one input: its 9 block scales bf16 from
// named data, or, with `inline_scales`, float32 in the flatbuffer.
std::vector<uint8_t> blockwise_payload(const std::vector<float>* inline_scales) {
  auto groups = [](flatbuffers::FlatBufferBuilder& b, const void* arg) {
    const auto* scales = static_cast<const std::vector<float>*>(arg);
    return (scales != nullptr ? fb::CreatePerChannelGroupQuantDirect(b, scales, 0, 1)
                              : fb::CreatePerChannelGroupQuantDirect(b, nullptr, 0, 1, 2, 9))
        .Union();
  };
  return dq_payload(fb::DataType_qbint4, fb::QuantParams_PerChannelGroupQuant, groups,
                    inline_scales, 6, 18);
}

// y[2, 3] = Convert(Convert(x[2, 3]) as qint8 with `scale` and `zero_point`).
std::vector<uint8_t> round_trip_payload(float scale, int32_t zero_point) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<uint32_t> dims = {2, 3};
  auto plain = [&](uint32_t external, uint32_t flags, uint32_t id) {
    auto t = fb::CreateTensorValueDirect(b, fb::DataType_fp32, 2, &dims, 0, external, flags, id);
    return fb::CreateValue(b, fb::ValueUnion_TensorValue, t.Union());
  };
  auto t = fb::CreateTensorValueDirect(b, fb::DataType_qint8, 2, &dims, 0, kXnnInvalidId, 0, 1);
  auto q = fb::CreateQuantizedTensorValue(b, t, fb::QuantParams_PerTensorQuant,
                                          fb::CreatePerTensorQuant(b, scale, zero_point).Union());
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      plain(0, 1, 0), fb::CreateValue(b, fb::ValueUnion_QuantizedTensorValue, q.Union()),
      plain(1, 2, 2)};
  std::vector<flatbuffers::Offset<fb::Node>> nodes = {
      fb::CreateNode(b, fb::NodeUnion_Convert, fb::CreateUnaryNode(b, 0, 1, 0).Union(), 1),
      fb::CreateNode(b, fb::NodeUnion_Convert, fb::CreateUnaryNode(b, 1, 2, 0).Union(), 2)};
  std::vector<flatbuffers::Offset<fb::ConstantDataOffset>> constants = {
      fb::CreateConstantDataOffsetDirect(b, 0, 0, nullptr)};
  b.Finish(fb::CreateGraphDirect(b, "0", &nodes, &values, 2, nullptr, nullptr, nullptr, nullptr,
                                 &constants),
           "XN01");
  return xnn_test::with_header(b);
}

// y[2, 3] = Convert(FullyConnected(Convert(x) as qint8 (0.5, 1), w qcint8
// `wdims` with scales "s", bias qcint32 [bias_len] "b" with scales "bs") as
// qint8 (0.25, -2)).
std::vector<uint8_t> static_fc_payload(std::vector<uint32_t> wdims, uint32_t bias_len) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<uint32_t> dims = {2, 3}, bdims = {bias_len};
  auto plain = [&](uint32_t external, uint32_t flags, uint32_t id) {
    auto t = fb::CreateTensorValueDirect(b, fb::DataType_fp32, 2, &dims, 0, external, flags, id);
    return fb::CreateValue(b, fb::ValueUnion_TensorValue, t.Union());
  };
  auto quantized = [&](fb::DataType type, const std::vector<uint32_t>& d, uint32_t constant,
                       uint32_t id, fb::QuantParams kind, flatbuffers::Offset<void> params) {
    auto t = fb::CreateTensorValueDirect(b, type, static_cast<uint32_t>(d.size()), &d, constant,
                                         kXnnInvalidId, 0, id);
    auto qt = fb::CreateQuantizedTensorValue(b, t, kind, params);
    return fb::CreateValue(b, fb::ValueUnion_QuantizedTensorValue, qt.Union());
  };
  auto per_tensor = [&](float scale, int32_t zp) {
    return fb::CreatePerTensorQuant(b, scale, zp).Union();
  };
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      plain(0, 1, 0),
      quantized(fb::DataType_qint8, dims, 0, 1, fb::QuantParams_PerTensorQuant,
                per_tensor(0.5f, 1)),
      quantized(fb::DataType_qcint8, wdims, 1, 2, fb::QuantParams_PerChannelQuant,
                fb::CreatePerChannelQuant(b, 0, 0, 2, wdims[0]).Union()),
      quantized(fb::DataType_qcint32, bdims, 3, 3, fb::QuantParams_PerChannelQuant,
                fb::CreatePerChannelQuant(b, 0, 0, 4, bias_len).Union()),
      quantized(fb::DataType_qint8, dims, 0, 4, fb::QuantParams_PerTensorQuant,
                per_tensor(0.25f, -2)),
      plain(1, 2, 5)};
  std::vector<flatbuffers::Offset<fb::Node>> nodes = {
      fb::CreateNode(b, fb::NodeUnion_Convert, fb::CreateUnaryNode(b, 0, 1, 0).Union(), 1),
      fb::CreateNode(b, fb::NodeUnion_FullyConnected,
                     fb::CreateFullyConnected(b, 1, 2, 3, 4, 0).Union(), 2),
      fb::CreateNode(b, fb::NodeUnion_Convert, fb::CreateUnaryNode(b, 4, 5, 0).Union(), 3)};
  std::vector<flatbuffers::Offset<fb::ConstantDataOffset>> constants = {
      fb::CreateConstantDataOffsetDirect(b, 0, 0, nullptr),
      fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, 9, "w"),
      fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, 4 * wdims[0], "s"),
      fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, 4 * bias_len, "b"),
      fb::CreateConstantDataOffsetDirect(b, ~uint64_t{0}, 4 * bias_len, "bs")};
  b.Finish(fb::CreateGraphDirect(b, "0", &nodes, &values, 2, nullptr, nullptr, nullptr, nullptr,
                                 &constants),
           "XN01");
  return xnn_test::with_header(b);
}

struct Fixture {
  std::vector<uint8_t> bytes = payload();
  float scales[3] = {0.5f, 0.25f, 2.0f};
  int32_t bias[3] = {4, -8, 100};
  float bias_scales[3] = {0.25f, 0.125f, 0.5f};
  alignas(16) int8_t weights[9] = {};
  format::ProgramDesc program;
  format::MethodDesc method;

  Fixture() {
    std::memcpy(weights, kWeights, sizeof(weights));
    method.name = "forward";
    method.values = {xnn_test::planned_value(DType::Float32, 0),
                     xnn_test::planned_value(DType::Float32, 64)};
    method.inputs = {0};
    method.outputs = {1};
    method.buffer_sizes = {128};
    method.buffer_devices.resize(1);
    format::DelegateDesc d;
    d.id = "XnnpackBackend";
    method.delegates = {d};
    method.chains.push_back({{{InstructionKind::DelegateCall, 0, 0, {0, 1}}}});
  }

  ExpandedMethod expand() {
    method.delegates[0].payload = bytes;
    program.named_data = {{"w", {reinterpret_cast<const uint8_t*>(weights), 9}},
                          {"s", {reinterpret_cast<const uint8_t*>(scales), 12}},
                          {"b", {reinterpret_cast<const uint8_t*>(bias), 12}},
                          {"bs", {reinterpret_cast<const uint8_t*>(bias_scales), 12}}};
    format::NamedDataMap named(program);
    return expand_delegates(method, named);
  }
};

template <typename T>
std::vector<T> values_of(const format::TensorDesc& t) {
  std::vector<T> out(t.numel);
  std::memcpy(out.data(), t.data.data(), t.nbytes);
  return out;
}

TEST(XnnpackQuant, ConvertAndFullyConnectedBecomeOneCall) {
  Fixture f;
  ExpandedMethod e = f.expand();
  ASSERT_TRUE(e.unsupported.empty()) << e.unsupported[0];
  const auto& instrs = e.desc.chains[0].instructions;
  ASSERT_EQ(instrs.size(), 1u) << "the Convert runs nothing";
  ASSERT_EQ(instrs[0].kind, InstructionKind::KernelCall);
  EXPECT_EQ(e.desc.operators[instrs[0].index].name, "xnnpack::fully_connected_dq");
  // (x, weight, scales, sums, bias, bits, nnb, min, max, y, y)
  const auto& args = instrs[0].args;
  ASSERT_EQ(args.size(), 11u);
  EXPECT_EQ(args[0], 0) << "the Convert's float input";
  const auto& w = *e.desc.values[args[1]].tensor;
  EXPECT_EQ(w.dtype, DType::Int8);
  EXPECT_EQ(w.sizes, (std::vector<int64_t>{3, 3}));
  // The file's bytes, copied into the method's own memory (advised for
  // huge pages: a decode step streams the filter).
  EXPECT_NE(w.data.data(), reinterpret_cast<const uint8_t*>(f.weights));
  ASSERT_EQ(w.data.size(), sizeof kWeights);
  EXPECT_EQ(std::memcmp(w.data.data(), kWeights, sizeof kWeights), 0);
  const auto& s = *e.desc.values[args[2]].tensor;
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(values_of<float>(s), (std::vector<float>{0.5f, 0.25f, 2.0f}));
  const auto& sums = *e.desc.values[args[3]].tensor;
  EXPECT_EQ(sums.dtype, DType::Int32);
  EXPECT_EQ(sums.sizes, (std::vector<int64_t>{3}));
  EXPECT_EQ(values_of<int32_t>(sums), (std::vector<int32_t>{2, 3, 10}));
  EXPECT_EQ(e.desc.values[args[4]].kind, ValueKind::None);
  EXPECT_EQ(e.desc.values[args[5]].int_value, 8);
  EXPECT_EQ(e.desc.values[args[6]].int_value, 1);
  EXPECT_EQ(args[9], 1);
  EXPECT_EQ(e.desc.buffer_sizes[0], 128u) << "the qdint8 value takes no memory";
}

TEST(XnnpackQuant, ScalesThatAreNotPositiveNormalFloatsAreInvalidPrograms) {
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(), 1e-40f}) {
    Fixture f;
    f.scales[1] = bad;
    try {
      f.expand();
      ADD_FAILURE() << "scale " << bad << " was accepted";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::InvalidProgram);
      EXPECT_NE(std::string(err.what()).find("scale 1 of filter value 2"), std::string::npos)
          << err.what();
    }
  }
}

// The 4-bit filter's bytes (low nibble first; 3 inputs a row, so the high
// half of each row's second byte is unused) and what each value means
// (stored - 8).
constexpr uint8_t kNibbles[6] = {0x1F, 0x08, 0x70, 0x0A, 0xF3, 0x04};
constexpr int kBlockValues[9] = {7, -7, 0, -8, -1, 2, -5, 7, -4};

/// ExecuTorch's XNNPACK runtime's bfloat16 of an inline float32 scale
/// (XNNCompiler.cpp, convertF32TensorToBF16): v * 1.00389105f, truncated.
uint16_t executorch_bf16(float v) {
  const float adjusted = v * 1.00389105f;
  uint32_t u;
  std::memcpy(&u, &adjusted, 4);
  return static_cast<uint16_t>(u >> 16);
}

ExpandedMethod expand_blockwise(Fixture& f, const std::vector<float>* inline_scales,
                                const uint16_t* named_scales) {
  f.bytes = blockwise_payload(inline_scales);
  f.method.delegates[0].payload = f.bytes;
  f.program.named_data = {{"w", {kNibbles, 6}},
                          {"s", {reinterpret_cast<const uint8_t*>(named_scales), 18}}};
  format::NamedDataMap named(f.program);
  return expand_delegates(f.method, named);
}

/// Checks the call's scales (bfloat16 bits `want`) and block sums.
void expect_blockwise(const ExpandedMethod& e, const uint16_t* want) {
  ASSERT_TRUE(e.unsupported.empty()) << e.unsupported[0];
  const auto& args = e.desc.chains[0].instructions[0].args;
  const auto& s = *e.desc.values[args[2]].tensor;
  EXPECT_EQ(s.dtype, DType::BFloat16) << "blockwise scales stay bfloat16, as XNNPACK keeps them";
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values_of<uint16_t>(s), std::vector<uint16_t>(want, want + 9));
  const auto& sums = *e.desc.values[args[3]].tensor;
  EXPECT_EQ(sums.dtype, DType::Float32);
  const std::vector<float> got = values_of<float>(sums);
  for (int j = 0; j < 3; ++j) {
    double expect = 0;
    for (int b = 0; b < 3; ++b) {
      const uint32_t u = uint32_t{want[3 * j + b]} << 16;
      float scale;
      std::memcpy(&scale, &u, 4);
      expect += double{scale} * kBlockValues[3 * j + b];
    }
    EXPECT_EQ(got[j], static_cast<float>(expect)) << "column " << j;
  }
  EXPECT_EQ(e.desc.values[args[5]].int_value, 4);
}

TEST(XnnpackQuant, BlockwiseScalesFromNamedDataStayBfloat16) {
  Fixture f;
  // 1, 0.25, 2, about 0.01, and others.
  const uint16_t named[9] = {0x3F80, 0x3E80, 0x4000, 0x3C23, 0x3F01,
                             0x4120, 0x3A83, 0x3DCD, 0x3F40};
  expect_blockwise(expand_blockwise(f, nullptr, named), named);
}

TEST(XnnpackQuant, InlineFloat32BlockScalesBecomeBfloat16AsExecuTorchMakesThem) {
  // Not rounded to nearest even: 1 + 2^-8, a tie that would stay 1, goes
  // up; 0.1 (0x3DCCCCCD) goes up; 1 and 2 stay.
  const std::vector<float> scales = {1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 0.1f, 3.14159f, 1e-3f,
                                     2.0f,           65504.0f,       1.0f, 7.0f};
  uint16_t want[9];
  for (int i = 0; i < 9; ++i) want[i] = executorch_bf16(scales[i]);
  EXPECT_EQ(want[0], 0x3F81);
  EXPECT_EQ(want[1], 0x3F82);
  EXPECT_EQ(want[2], 0x3DCD);
  EXPECT_EQ(want[5], 0x4000);
  EXPECT_EQ(want[7], 0x3F80);
  Fixture f;
  const uint16_t unused[9] = {};
  expect_blockwise(expand_blockwise(f, &scales, unused), want);
}

TEST(XnnpackQuant, InlineBlockScalesPastBfloat16AreInvalidPrograms) {
  // The largest float32 becomes infinity (its product overflows).
  for (float bad : {std::numeric_limits<float>::max(), -2.0f, 0.0f}) {
    std::vector<float> scales(9, 0.5f);
    scales[4] = bad;
    Fixture f;
    const uint16_t unused[9] = {};
    try {
      expand_blockwise(f, &scales, unused);
      ADD_FAILURE() << "scale " << bad << " was accepted";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::InvalidProgram);
      EXPECT_NE(std::string(err.what()).find("scale 4 of filter value 2"), std::string::npos)
          << err.what();
    }
  }
  // 1.2e-38, normal in float32, stays normal: taken.
  const std::vector<float> tiny(9, 1.2e-38f);
  Fixture f;
  const uint16_t unused[9] = {};
  EXPECT_TRUE(expand_blockwise(f, &tiny, unused).unsupported.empty());
}

TEST(XnnpackQuant, QdInt8ReadByAnotherNodeKeepsTheDelegate) {
  Fixture f;
  f.bytes = payload(/*second_reader=*/true);
  ExpandedMethod e = f.expand();
  ASSERT_EQ(e.unsupported.size(), 1u);
  EXPECT_NE(e.unsupported[0].find("node 0 (Convert)"), std::string::npos) << e.unsupported[0];
  EXPECT_NE(e.unsupported[0].find("only FullyConnected inputs are implemented"), std::string::npos)
      << e.unsupported[0];
  EXPECT_EQ(e.desc.chains[0].instructions[0].kind, InstructionKind::DelegateCall);
}

TEST(XnnpackQuant, StaticConvertsBecomeQuantizeAndDequantize) {
  Fixture f;
  f.bytes = round_trip_payload(0.25f, -3);
  ExpandedMethod e = f.expand();
  ASSERT_TRUE(e.unsupported.empty()) << e.unsupported[0];
  const auto& instrs = e.desc.chains[0].instructions;
  ASSERT_EQ(instrs.size(), 2u);
  EXPECT_EQ(e.desc.operators[instrs[0].index].name,
            "quantized_decomposed::quantize_per_tensor.out");
  EXPECT_EQ(e.desc.operators[instrs[1].index].name,
            "quantized_decomposed::dequantize_per_tensor.out");
  // (x, scale, zero point, -128, 127, int8, t, t)
  const auto& q = instrs[0].args;
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(e.desc.values[q[1]].double_value, 0.25);
  EXPECT_EQ(e.desc.values[q[2]].int_value, -3);
  EXPECT_EQ(e.desc.values[q[5]].int_value, static_cast<int64_t>(DType::Int8));
  const auto& t = *e.desc.values[q[6]].tensor;
  EXPECT_EQ(t.dtype, DType::Int8) << "the qint8 value is an int8 tensor in planned memory";
  EXPECT_EQ(t.storage, format::TensorStorage::Planned);
  EXPECT_EQ(instrs[1].args[0], q[6]);
  EXPECT_EQ(instrs[1].args.back(), 1);
}

TEST(XnnpackQuant, StaticParametersOutOfRangeKeepTheDelegate) {
  for (auto [scale, zp] :
       {std::pair{0.0f, 0}, std::pair{-1.0f, 0},
        std::pair{std::numeric_limits<float>::quiet_NaN(), 0}, std::pair{0.5f, 200}}) {
    Fixture f;
    f.bytes = round_trip_payload(scale, zp);
    ExpandedMethod e = f.expand();
    ASSERT_EQ(e.unsupported.size(), 1u) << scale << " " << zp;
    EXPECT_NE(e.unsupported[0].find("node 0 (Convert): value 1 (qint8) has scale"),
              std::string::npos)
        << e.unsupported[0];
  }
}

TEST(XnnpackQuant, StaticFullyConnectedRunsOnTheIntegerLinear) {
  Fixture f;
  f.bytes = static_fc_payload({3, 3}, 3);
  ExpandedMethod e = f.expand();
  ASSERT_TRUE(e.unsupported.empty()) << e.unsupported[0];
  const auto& instrs = e.desc.chains[0].instructions;
  ASSERT_EQ(instrs.size(), 3u);
  EXPECT_EQ(e.desc.operators[instrs[1].index].name, "pterun::quantized_linear.out");
  // (t, 0.5, 1, weight, scales, sums, bias, 0.25, -2, lo, hi, u, u)
  const auto& a = instrs[1].args;
  ASSERT_EQ(a.size(), 13u);
  EXPECT_EQ(a[0], instrs[0].args.back());
  EXPECT_EQ(e.desc.values[a[1]].double_value, 0.5);
  EXPECT_EQ(e.desc.values[a[2]].int_value, 1);
  EXPECT_EQ(e.desc.values[a[3]].tensor->data.data(), reinterpret_cast<const uint8_t*>(f.weights));
  EXPECT_EQ(values_of<float>(*e.desc.values[a[4]].tensor), (std::vector<float>{0.5f, 0.25f, 2.0f}));
  EXPECT_EQ(values_of<int32_t>(*e.desc.values[a[5]].tensor), (std::vector<int32_t>{2, 3, 10}));
  EXPECT_EQ(values_of<float>(*e.desc.values[a[6]].tensor), (std::vector<float>{1.0f, -1.0f, 50.0f}))
      << "bias = q * its scale";
  EXPECT_EQ(e.desc.values[a[7]].double_value, 0.25);
  EXPECT_EQ(e.desc.values[a[8]].int_value, -2);
  EXPECT_EQ(e.desc.values[a[9]].int_value, -128);
  EXPECT_EQ(e.desc.values[a[10]].int_value, 127);
  EXPECT_EQ(e.desc.values[a[11]].tensor->dtype, DType::Int8);
  EXPECT_EQ(instrs[2].args[0], a[11]);
}

TEST(XnnpackQuant, StaticFiltersAndBiasesOfTheWrongShape) {
  // A filter that is not 2-D: the payload reader refuses the graph.
  Fixture bad_filter;
  bad_filter.bytes = static_fc_payload({3, 3, 1}, 3);
  EXPECT_EQ(test::error_code_of([&] { bad_filter.expand(); }), ErrorCode::InvalidProgram);
  // A bias of another length than the outputs: the delegate is kept, with
  // the reason.
  Fixture bad_bias;
  bad_bias.bytes = static_fc_payload({3, 3}, 2);
  ExpandedMethod e = bad_bias.expand();
  ASSERT_EQ(e.unsupported.size(), 1u);
  EXPECT_NE(e.unsupported[0].find("node 1 (FullyConnected): bias value 3 (qcint32) must be a "
                                  "constant qcint32 or qint32 vector of 3 values"),
            std::string::npos)
      << e.unsupported[0];
}

}  // namespace
}  // namespace pterun::delegates
