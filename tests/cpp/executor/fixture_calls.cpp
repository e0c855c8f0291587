#include "tests/cpp/executor/fixture_calls.h"

#include <gtest/gtest.h>

#include <cmath>

#include "pterun/core/half.h"
#include "pterun/executor/constant_fold.h"
#include "pterun/kernels/common/dtype_util.h"
#include "tests/cpp/test_util.h"

namespace pterun::test {

using nlohmann::json;

std::vector<Call> load_calls(const json& entry, const std::string& dir) {
  const std::string base = dir.empty() ? fixtures_dir() : dir;
  auto arrays = cli::read_npz(base + "/" + entry["files"]["npz"].get<std::string>());
  auto find = [&](const std::string& key) {
    for (auto& [k, a] : arrays) {
      if (k == key) return a;
    }
    throw std::runtime_error("missing npz key " + key);
  };
  std::vector<Call> calls;
  for (const auto& c : entry["calls"]) {
    Call call;
    call.method = c["method"];
    for (const auto& in : c["inputs"]) {
      call.input_kinds.push_back(in["kind"]);
      cli::NpyArray a;
      if (in["kind"] != "None") a = find(in["key"]);
      if (in.contains("dtype") && in["dtype"] == "bfloat16") a.dtype = DType::BFloat16;
      call.inputs.push_back(std::move(a));
    }
    for (const auto& out : c["outputs"]) {
      if (out["kind"] == "None") {
        call.outputs.emplace_back(std::nullopt);
      } else {
        call.outputs.emplace_back(find(out["key"]));
      }
      call.output_dtypes.push_back(
          out.contains("dtype") && out["dtype"].is_string() ? out["dtype"].get<std::string>() : "");
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

std::vector<InputArg> make_inputs(const Call& call) {
  std::vector<InputArg> args;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const auto& a = call.inputs[i];
    const auto& kind = call.input_kinds[i];
    if (kind == "Tensor") {
      args.push_back(InputArg::tensor(a.data.data(), a.dtype, a.shape, a.strides));
    } else if (kind == "Int") {
      args.push_back(InputArg::from_int(*reinterpret_cast<const int64_t*>(a.data.data())));
    } else if (kind == "Double") {
      args.push_back(InputArg::from_double(*reinterpret_cast<const double*>(a.data.data())));
    } else if (kind == "Bool") {
      args.push_back(InputArg::from_bool(a.data[0] != 0));
    } else {
      args.push_back(InputArg::none());
    }
  }
  return args;
}

namespace {

// Logical-order values of a tensor as doubles.
std::vector<double> values_of(const Tensor& t, const void* data) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  kernels::visit(t.dtype(), kernels::Family::RealHBBF16, "test", [&]<typename T>() {
    const T* p = static_cast<const T*>(data);
    for (int64_t linear = 0; linear < t.numel(); ++linear) {
      int64_t rem = linear, off = 0;
      for (size_t d = t.dim(); d-- > 0;) {
        off += (rem % t.size(d)) * t.stride(d);
        rem /= t.size(d);
      }
      out[linear] = kernels::convert<double>(p[off]);
    }
  });
  return out;
}

std::vector<double> values_of(const cli::NpyArray& a, DType as) {
  size_t n = a.data.size() / element_size(as);
  std::vector<double> out(n);
  kernels::visit(as, kernels::Family::RealHBBF16, "test", [&]<typename T>() {
    const T* p = reinterpret_cast<const T*>(a.data.data());
    for (size_t k = 0; k < n; ++k) out[k] = kernels::convert<double>(p[k]);
  });
  return out;
}

}  // namespace

void expect_matches(const Value& got, const std::optional<cli::NpyArray>& expected,
                    const std::string& dtype_name_str, const std::string& where,
                    const void* host_data, double rtol) {
  if (!expected) {
    EXPECT_TRUE(got.is_none()) << where;
    return;
  }
  if (!got.is_tensor()) {
    double e = values_of(*expected, expected->dtype)[0];
    double g = got.kind() == ValueKind::Bool ? got.to_bool() : got.to_double();
    EXPECT_NEAR(g, e, 1e-9 + 1e-6 * std::fabs(e)) << where;
    return;
  }
  const Tensor& t = got.to_tensor();
  DType want = dtype_name_str == "bfloat16" ? DType::BFloat16 : expected->dtype;
  ASSERT_EQ(t.dtype(), want) << where;
  ASSERT_EQ(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), expected->shape) << where;
  auto g = values_of(t, host_data != nullptr ? host_data : t.data());
  auto e = values_of(*expected, want);
  double tol = want == DType::Float32    ? 1e-5
               : want == DType::Float16  ? 2e-3
               : want == DType::BFloat16 ? 1.6e-2
               : want == DType::Float64  ? 1e-9
                                         : 0.0;
  if (rtol > 0 && tol > 0) tol = rtol;
  double scale = 1;
  for (double x : e) scale = std::max(scale, std::fabs(x));
  for (size_t k = 0; k < e.size(); ++k) {
    ASSERT_NEAR(g[k], e[k], tol * (std::fabs(e[k]) + scale)) << where << " element " << k;
  }
}

std::shared_ptr<const Program> load_fixture(const json& entry, const std::string& from) {
  std::string dir = (from.empty() ? fixtures_dir() : from) + "/";
  std::string data = entry["files"].contains("ptd") ? dir + entry["files"]["ptd"].get<std::string>()
                                                    : std::string();
  return Program::load_file(dir + entry["files"]["pte"].get<std::string>(), data);
}

std::vector<std::vector<bool>> none_idle(const format::MethodDesc& d) {
  std::vector<std::vector<bool>> idle;
  for (const auto& chain : d.chains) idle.emplace_back(chain.instructions.size(), false);
  return idle;
}

std::vector<std::vector<bool>> folded(const format::MethodDesc& d) {
  auto idle = none_idle(d);
  for (auto [c, k] : find_constant_instructions(d, inputs_and_outputs(d), Device::CPU)) {
    idle[c][k] = true;
  }
  return idle;
}

std::string op_at(const format::MethodDesc& d, size_t chain, size_t k) {
  return d.operators[d.chains[chain].instructions[k].index].full_name();
}

std::vector<bool> inputs_and_outputs(const format::MethodDesc& d) {
  std::vector<bool> keep(d.values.size(), false);
  for (int32_t v : d.inputs) keep[v] = true;
  for (int32_t v : d.outputs) keep[v] = true;
  return keep;
}

}  // namespace pterun::test
