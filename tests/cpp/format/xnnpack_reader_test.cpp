// The XNNPACK payload reader on the exported fixtures (tests/fixtures/xnnpack:
// every value and node field must match what ExecuTorch's own schema and
// flatc read from the same payload, recorded in its manifest), on damaged
// copies of their payloads (truncations, bit flips, hostile words: a
// pterun::Error or a valid graph, never a crash; run under ASan in CI) and
// on hand-built payloads, one defect each.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "pterun/core/error.h"
#include "pterun/format/data_buffer.h"
#include "pterun/format/header.h"
#include "pterun/format/xnnpack_reader.h"
#include "tests/cpp/test_util.h"

namespace pterun::format {
namespace {

using nlohmann::json;

std::string xnn_fixtures_dir() {
  return test::fixtures_dir() + "/xnnpack";
}

const json& xnn_manifest() {
  static const json m = [] {
    std::ifstream in(xnn_fixtures_dir() + "/manifest.json");
    if (!in) throw std::runtime_error("test: tests/fixtures/xnnpack/manifest.json is missing");
    return json::parse(in);
  }();
  return m;
}

struct Fixture {
  std::shared_ptr<const DataBuffer> buffer;
  ProgramDesc program;
  std::unique_ptr<NamedDataMap> named;

  const MethodDesc& forward() const { return *program.find_method("forward"); }
};

const Fixture& fixture(const std::string& name) {
  static std::map<std::string, Fixture> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    Fixture f;
    f.buffer = DataBuffer::map_file(xnn_fixtures_dir() + "/" + name + ".pte");
    f.program = read_program(*f.buffer);
    it = loaded.emplace(name, std::move(f)).first;
    it->second.named = std::make_unique<NamedDataMap>(it->second.program);
  }
  return it->second;
}

XnnGraphDesc read_delegate(const std::string& name, size_t delegate) {
  const Fixture& f = fixture(name);
  return read_xnnpack_delegate(f.forward(), delegate, *f.named);
}

// ----------------------------------------------------------------------------
// Against ExecuTorch's reading of the same payloads

uint32_t id_of(const XnnGraphDesc& g, int32_t value) {
  return value == kXnnNoValue ? kXnnInvalidId : g.values[value].id;
}

// The node's fields under the names ExecuTorch's schema gives them.
json fields_of(const XnnNodeDesc& n, const XnnGraphDesc& g) {
  json f;
  auto in = [&](size_t i) { return i < n.inputs.size() ? id_of(g, n.inputs[i]) : kXnnInvalidId; };
  auto out = [&](size_t i) { return id_of(g, n.outputs[i]); };
  using T = XnnNodeType;
  switch (n.type) {
    case T::FullyConnected:
      f = {{"input1_id", in(0)}, {"filter_id", in(1)}, {"bias_id", in(2)}, {"output_id", out(0)}};
      break;
    case T::ScaledDotProductAttention:
      f = {{"query_id", in(0)}, {"key_id", in(1)},  {"value_id", in(2)},
           {"scale_id", in(3)}, {"mask_id", in(4)}, {"output_id", out(0)}};
      break;
    case T::ArgMaxPooling2d:
      f = {{"input_id", in(0)}, {"output_value_id", out(0)}, {"output_index_id", out(1)}};
      break;
    case T::Conv2d:
    case T::DepthwiseConv2d:
    case T::ConvTranspose2d:
      f = {{"input1_id", in(0)}, {"filter_id", in(1)}, {"bias_id", in(2)}, {"output_id", out(0)}};
      break;
    case T::Concatenate2:
    case T::Concatenate3:
    case T::Concatenate4:
    case T::Concatenate5:
      f = {{"input1_id", in(0)}, {"input2_id", in(1)}, {"input3_id", in(2)},
           {"input4_id", in(3)}, {"input5_id", in(4)}, {"output_id", out(0)}};
      break;
    default:
      if (n.inputs.size() == 2) {
        f = {{"input1_id", in(0)}, {"input2_id", in(1)}, {"output_id", out(0)}};
      } else {
        f = {{"input_id", in(0)}, {"output_id", out(0)}};
      }
  }
  f["flags"] = n.flags;
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, XnnConvParams>) {
          f.update({{"padding_top", p.padding_top},
                    {"padding_right", p.padding_right},
                    {"padding_bottom", p.padding_bottom},
                    {"padding_left", p.padding_left},
                    {"kernel_height", p.kernel_height},
                    {"kernel_width", p.kernel_width},
                    {"subsampling_height", p.subsampling_height},
                    {"subsampling_width", p.subsampling_width},
                    {"dilation_height", p.dilation_height},
                    {"dilation_width", p.dilation_width},
                    {"group_input_channels", p.group_input_channels},
                    {"group_output_channels", p.group_output_channels},
                    {"groups", p.groups},
                    {"adjustment_height", p.adjustment_height},
                    {"adjustment_width", p.adjustment_width}});
        } else if constexpr (std::is_same_v<P, XnnPoolingParams>) {
          f.update({{"padding_top", p.padding_top},
                    {"padding_right", p.padding_right},
                    {"padding_bottom", p.padding_bottom},
                    {"padding_left", p.padding_left},
                    {"pooling_height", p.pooling_height},
                    {"pooling_width", p.pooling_width},
                    {"stride_height", p.stride_height},
                    {"stride_width", p.stride_width},
                    {"dilation_height", p.dilation_height},
                    {"dilation_width", p.dilation_width}});
        } else if constexpr (std::is_same_v<P, XnnArgMaxPoolingParams>) {
          f.update({{"padding_top", p.padding_top},
                    {"padding_right", p.padding_right},
                    {"padding_bottom", p.padding_bottom},
                    {"padding_left", p.padding_left},
                    {"pooling_height", p.pooling_height},
                    {"pooling_width", p.pooling_width}});
        } else if constexpr (std::is_same_v<P, XnnTransposeParams>) {
          f.update({{"num_dims", p.perm.size()}, {"perm", p.perm}});
        } else if constexpr (std::is_same_v<P, XnnReshapeParams>) {
          f.update({{"num_dims", p.new_shape.size()}, {"new_shape", p.new_shape}});
        } else if constexpr (std::is_same_v<P, XnnSliceParams>) {
          f.update({{"num_dims", p.offsets.size()}, {"offsets", p.offsets}, {"sizes", p.sizes}});
        } else if constexpr (std::is_same_v<P, XnnPadParams>) {
          f.update({{"pre_paddings", p.pre_paddings},
                    {"post_paddings", p.post_paddings},
                    {"padding_value", p.padding_value}});
        } else if constexpr (std::is_same_v<P, XnnResizeParams>) {
          f.update({{"new_height", p.new_height}, {"new_width", p.new_width}});
        } else if constexpr (std::is_same_v<P, XnnConcatParams>) {
          f["axis"] = p.axis;
        } else if constexpr (std::is_same_v<P, XnnScalarParams>) {
          f[n.type == T::ELU ? "alpha" : "negative_slope"] = p.value;
        }
      },
      n.params);
  return f;
}

// The manifest writes non-finite floats as "inf", "-inf", "nan".
double number(const json& j) {
  if (j.is_string()) return std::stod(j.get<std::string>());
  return j.get<double>();
}

void expect_same(const json& ours, const json& theirs, const std::string& what) {
  if (theirs.is_number_float() || ours.is_number_float()) {
    double a = number(ours), b = number(theirs);
    if (std::isinf(a) || std::isinf(b)) {
      EXPECT_EQ(a, b) << what;
    } else {
      EXPECT_NEAR(a, b, 1e-6 * std::max(1.0, std::abs(b))) << what;
    }
  } else {
    EXPECT_EQ(ours, theirs) << what;
  }
}

TEST(XnnpackFixtures, EveryValueAndNodeMatchesExecuTorchsReading) {
  const json& fixtures = xnn_manifest()["fixtures"];
  ASSERT_GE(fixtures.size(), 5u);  // the five models, then the op fixtures
  for (const auto& [name, entry] : fixtures.items()) {
    const Fixture& f = fixture(name);
    const MethodDesc& method = f.forward();
    const json& delegates = entry["xnnpack"]["forward"];
    ASSERT_FALSE(delegates.empty()) << name;
    for (const json& d : delegates) {
      size_t index = d["delegate"].get<size_t>();
      std::string where = name + ", delegate " + std::to_string(index);
      XnnGraphDesc g = read_xnnpack_delegate(method, index, *f.named);
      EXPECT_EQ(g.has_header, !d["header"].is_null()) << where;
      EXPECT_EQ(g.identifier, d["identifier"].get<std::string>()) << where;
      EXPECT_EQ(g.version, d["version"].get<std::string>()) << where;
      EXPECT_EQ(g.num_externs, d["num_externs"].get<uint32_t>()) << where;
      EXPECT_EQ(delegate_call_num_args(method, index), d["num_args"].get<size_t>()) << where;
      EXPECT_EQ(g.num_constants(), d["num_constants"].get<size_t>()) << where;

      ASSERT_EQ(g.values.size(), d["values"].size()) << where;
      for (size_t i = 0; i < g.values.size(); ++i) {
        const XnnValueDesc& v = g.values[i];
        const json& e = d["values"][i];
        std::string at = where + ", value " + std::to_string(i);
        EXPECT_EQ(v.id, e["id"].get<uint32_t>()) << at;
        EXPECT_EQ(xnn_datatype_name(v.datatype), e["datatype"].get<std::string>()) << at;
        EXPECT_EQ(json(v.dims), e["dims"]) << at;
        EXPECT_EQ(v.external_id,
                  e["external_id"].is_null() ? kXnnInvalidId : e["external_id"].get<uint32_t>())
            << at;
        EXPECT_EQ((v.is_input ? 1u : 0u) | (v.is_output ? 2u : 0u), e["flags"].get<uint32_t>())
            << at;
        EXPECT_EQ(v.is_constant, !e["constant_key"].is_null()) << at;
        if (v.is_constant) {
          EXPECT_EQ(v.constant_key, e["constant_key"].get<std::string>()) << at;
          EXPECT_EQ(v.data.size(), v.nbytes) << at;
          auto named = f.named->find(v.constant_key);
          ASSERT_TRUE(named.has_value()) << at;
          EXPECT_EQ(v.data.data(), named->data()) << at;
        }
        EXPECT_EQ(v.quant.kind != XnnQuantKind::None, e.contains("quant")) << at;
      }

      ASSERT_EQ(g.nodes.size(), d["nodes"].size()) << where;
      std::map<std::string, size_t> counts;
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        const XnnNodeDesc& n = g.nodes[i];
        const json& e = d["nodes"][i];
        std::string at = where + ", node " + std::to_string(i);
        ++counts[std::string(xnn_node_type_name(n.type))];
        EXPECT_EQ(xnn_node_type_name(n.type), e["type"].get<std::string>()) << at;
        EXPECT_EQ(n.debug_handle, e["debug_handle"].get<uint32_t>()) << at;
        EXPECT_EQ(n.output_min_max.has_value(), !e["output_min_max"].is_null()) << at;
        if (n.output_min_max && !e["output_min_max"].is_null()) {
          expect_same(n.output_min_max->min, e["output_min_max"][0], at + " output_min");
          expect_same(n.output_min_max->max, e["output_min_max"][1], at + " output_max");
        }
        json ours = fields_of(n, g);
        for (const auto& [field, value] : e["fields"].items()) {
          ASSERT_TRUE(ours.contains(field)) << at << ": no field " << field;
          expect_same(ours[field], value, at + " " + field);
        }
      }
      EXPECT_EQ(json(counts), d["node_counts"]) << where;

      // External id k is the delegate call's argument k: same element count.
      const InstructionDesc* call = nullptr;
      for (const auto& chain : method.chains) {
        for (const auto& instr : chain.instructions) {
          if (instr.kind == InstructionKind::DelegateCall &&
              static_cast<size_t>(instr.index) == index) {
            call = &instr;
          }
        }
      }
      ASSERT_NE(call, nullptr) << where;
      for (const auto* side : {&g.inputs, &g.outputs}) {
        for (const XnnExternal& x : *side) {
          const ValueDesc& arg = method.values[call->args[x.external_id]];
          ASSERT_EQ(arg.kind, ValueKind::Tensor) << where;
          EXPECT_EQ(arg.tensor->numel, g.values[x.value].numel) << where;
        }
      }
    }
  }
}

TEST(XnnpackFixtures, KnownFields) {
  // MLP: three fully connected layers ([N, K] filters), ReLU fused as a clamp.
  XnnGraphDesc mlp = read_delegate("mlp", 0);
  EXPECT_TRUE(mlp.has_header);
  EXPECT_EQ(mlp.identifier, "XN01");
  ASSERT_EQ(mlp.nodes.size(), 5u);
  EXPECT_EQ(mlp.values.size(), 12u);
  EXPECT_EQ(mlp.num_constants(), 6u);
  const XnnNodeDesc& fc = mlp.nodes[0];
  EXPECT_EQ(fc.type, XnnNodeType::FullyConnected);
  ASSERT_TRUE(fc.output_min_max.has_value());
  EXPECT_EQ(fc.output_min_max->min, 0.0f);
  EXPECT_TRUE(std::isinf(fc.output_min_max->max));
  EXPECT_EQ(mlp.values[fc.inputs[1]].dims, (std::vector<uint32_t>{128, 64}));
  EXPECT_EQ(mlp.values[fc.inputs[1]].data.size(), 128u * 64 * 4);
  EXPECT_EQ(mlp.nodes[4].type, XnnNodeType::Softmax);
  ASSERT_EQ(mlp.inputs.size(), 1u);
  ASSERT_EQ(mlp.outputs.size(), 1u);
  EXPECT_EQ(mlp.inputs[0].external_id, 0u);
  EXPECT_EQ(mlp.outputs[0].external_id, 1u);
  EXPECT_EQ(mlp.values[mlp.outputs[0].value].dims, (std::vector<uint32_t>{4, 10}));

  // MobileNet: NCHW -> NHWC transpose first, NHWC dims and [OC, KH, KW, IC]
  // filters inside, ReLU6 fused, back to NCHW before the flatten.
  XnnGraphDesc mnet = read_delegate("mobilenet", 0);
  const XnnNodeDesc& first = mnet.nodes.front();
  ASSERT_EQ(first.type, XnnNodeType::StaticTranspose);
  EXPECT_EQ(std::get<XnnTransposeParams>(first.params).perm, (std::vector<uint32_t>{0, 2, 3, 1}));
  EXPECT_EQ(mnet.values[first.inputs[0]].dims, (std::vector<uint32_t>{1, 3, 32, 32}));
  EXPECT_EQ(mnet.values[first.outputs[0]].dims, (std::vector<uint32_t>{1, 32, 32, 3}));
  const XnnNodeDesc& stem = mnet.nodes[1];
  ASSERT_EQ(stem.type, XnnNodeType::Conv2d);
  const auto& conv = std::get<XnnConvParams>(stem.params);
  EXPECT_EQ(conv.kernel_height, 3u);
  EXPECT_EQ(conv.subsampling_height, 2u);
  EXPECT_EQ(conv.padding_top, 1u);
  EXPECT_EQ(conv.group_output_channels, 16u);
  EXPECT_EQ(mnet.values[stem.inputs[1]].dims, (std::vector<uint32_t>{16, 3, 3, 3}));
  ASSERT_TRUE(stem.output_min_max.has_value());
  EXPECT_EQ(stem.output_min_max->max, 6.0f);
  const XnnNodeDesc& dw = mnet.nodes[2];
  ASSERT_EQ(dw.type, XnnNodeType::DepthwiseConv2d);
  EXPECT_EQ(std::get<XnnConvParams>(dw.params).groups, 16u);
  EXPECT_EQ(mnet.values[dw.inputs[1]].dims, (std::vector<uint32_t>{1, 3, 3, 16}));
  auto counts = mnet.node_counts();
  EXPECT_EQ(counts[static_cast<size_t>(XnnNodeType::Conv2d)], 9u);
  EXPECT_EQ(counts[static_cast<size_t>(XnnNodeType::DepthwiseConv2d)], 4u);
  EXPECT_EQ(counts[static_cast<size_t>(XnnNodeType::Hardswish)], 5u);
  EXPECT_EQ(counts[static_cast<size_t>(XnnNodeType::StaticTranspose)], 2u);

  // ResNet: 3x3 stride-2 max pool with padding 1, in NHWC.
  XnnGraphDesc resnet = read_delegate("resnet", 0);
  const XnnNodeDesc& pool = resnet.nodes[2];
  ASSERT_EQ(pool.type, XnnNodeType::MaxPooling2d);
  const auto& pp = std::get<XnnPoolingParams>(pool.params);
  EXPECT_EQ(pp.pooling_height, 3u);
  EXPECT_EQ(pp.stride_width, 2u);
  EXPECT_EQ(pp.padding_left, 1u);
  EXPECT_EQ(resnet.values[pool.outputs[0]].dims, (std::vector<uint32_t>{2, 16, 16, 16}));

  // Transformer: eight delegates around the portable layer norms; the
  // attention one passes its scale as an input, not a constant.
  const MethodDesc& tf = fixture("transformer").forward();
  EXPECT_EQ(tf.delegates.size(), 8u);
  XnnGraphDesc att = read_delegate("transformer", 2);
  EXPECT_EQ(att.node_counts()[static_cast<size_t>(XnnNodeType::BatchMatrixMultiply)], 2u);
  EXPECT_EQ(att.inputs.size(), 5u);
  EXPECT_EQ(att.values[att.inputs[3].value].dims, (std::vector<uint32_t>{1}));

  // LSTM: the gates' concatenations along axis 0.
  XnnGraphDesc lstm = read_delegate("lstm", 9);
  const XnnNodeDesc& cat = lstm.nodes[9];
  ASSERT_EQ(cat.type, XnnNodeType::Concatenate5);
  EXPECT_EQ(cat.inputs.size(), 5u);
  EXPECT_EQ(std::get<XnnConcatParams>(cat.params).axis, 0u);
  EXPECT_EQ(lstm.nodes[10].type, XnnNodeType::Concatenate4);
  EXPECT_EQ(lstm.nodes[10].inputs.size(), 4u);
}

TEST(XnnpackFixtures, DelegateIndexAndBackendAreChecked) {
  const Fixture& f = fixture("mlp");
  auto code = test::error_code_of([&] { read_xnnpack_delegate(f.forward(), 1, *f.named); });
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  MethodDesc other = f.forward();
  other.delegates[0].id = "CoreMLBackend";
  code = test::error_code_of([&] { read_xnnpack_delegate(other, 0, *f.named); });
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  // Without the named data the weights are missing.
  ProgramDesc empty;
  NamedDataMap none(empty);
  code = test::error_code_of([&] { read_xnnpack_delegate(f.forward(), 0, none); });
  EXPECT_EQ(code, ErrorCode::InvalidProgram);
}

// ----------------------------------------------------------------------------
// Damaged payloads

struct Tally {
  size_t read = 0;
  size_t rejected = 0;
};

uint64_t touch(std::span<const uint8_t> bytes) {
  return bytes.empty() ? 0 : uint64_t{bytes.front()} + bytes.back();
}

// Reads exactly `bytes` (an allocation of that size, so ASan sees any read
// past the end); anything but a pterun::Error fails the test.
void try_read(const std::vector<uint8_t>& bytes, const NamedDataMap& named, size_t num_args,
              Tally& tally, const std::string& what) {
  try {
    XnnGraphDesc g = read_xnnpack_graph(bytes, named, num_args);
    volatile uint64_t sink = 0;
    for (const auto& v : g.values) sink = sink + touch(v.data) + touch(v.quant.scale_data);
    for (const auto& n : g.nodes) {
      for (int32_t i : n.inputs) sink = sink + (i == kXnnNoValue ? 0 : g.values[i].nbytes);
      for (int32_t o : n.outputs) sink = sink + g.values[o].nbytes;
    }
    ++tally.read;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::InvalidProgram) {
      ADD_FAILURE() << what << ": " << error_code_name(e.code()) << ": " << e.what();
    }
    ++tally.rejected;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception type: " << e.what();
  }
}

void put_word(std::vector<uint8_t>& b, size_t at, uint64_t v, size_t width) {
  for (size_t i = 0; i < width; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

Tally damage(const std::vector<uint8_t>& original, const NamedDataMap& named, size_t num_args) {
  Tally tally;
  const size_t n = original.size();
  for (size_t len = 0; len < n; ++len) {
    try_read(std::vector<uint8_t>(original.begin(), original.begin() + len), named, num_args, tally,
             "truncated to " + std::to_string(len));
  }
  std::vector<uint8_t> b = original;
  for (size_t i = 0; i < n; ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      b[i] ^= mask;
      try_read(b, named, num_args, tally,
               "byte " + std::to_string(i) + " ^ " + std::to_string(mask));
      b[i] ^= mask;
    }
  }
  for (size_t at = 0; at + 4 <= n; at += 4) {
    uint32_t word = read_u32le(&original[at]);
    for (uint64_t v :
         {uint64_t{0}, uint64_t{0xffffffff}, uint64_t{0x7fffffff}, uint64_t{0x80000000},
          uint64_t{word} + 4, uint64_t{word} - 4, uint64_t{n}, uint64_t{word} + 1}) {
      put_word(b, at, v, 4);
      try_read(b, named, num_args, tally, "word at " + std::to_string(at));
    }
    put_word(b, at, word, 4);
  }
  // The header's fields at their extremes.
  for (auto [at, width] :
       std::vector<std::pair<size_t, size_t>>{{8, 2}, {10, 4}, {14, 4}, {18, 4}, {22, 8}}) {
    for (uint64_t v : {uint64_t{0}, uint64_t{8}, uint64_t{30}, uint64_t{n - 1}, uint64_t{n},
                       uint64_t{n + 1}, uint64_t{0xffff}, uint64_t{0xffffffff}, ~uint64_t{0}}) {
      put_word(b, at, v, width);
      try_read(b, named, num_args, tally, "header field at " + std::to_string(at));
    }
    b = original;
  }
  return tally;
}

TEST(XnnpackDamage, DamagedPayloadsGiveProgramErrorsOnly) {
  for (auto [name, delegate] : std::vector<std::pair<std::string, size_t>>{
           {"mobilenet", 0}, {"transformer", 2}, {"lstm", 9}}) {
    SCOPED_TRACE(name);
    const Fixture& f = fixture(name);
    const DelegateDesc& d = f.forward().delegates[delegate];
    std::vector<uint8_t> payload(d.payload.begin(), d.payload.end());
    size_t num_args = *delegate_call_num_args(f.forward(), delegate);
    Tally t = damage(payload, *f.named, num_args);
    EXPECT_GT(t.rejected, 0u);
    EXPECT_GT(t.read, 0u);  // some flips (in weights' keys' padding, floats) leave a valid graph
    std::cout << "[xnnpack damage] " << name << " delegate " << delegate << ": "
              << t.read + t.rejected << " damaged copies, " << t.rejected << " rejected\n";
  }
}

}  // namespace
}  // namespace pterun::format
