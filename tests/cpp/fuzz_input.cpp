#include "tests/cpp/fuzz_input.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <variant>
#include <vector>

#include "pterun/core/error.h"
#include "pterun/core/host_buffer.h"
#include "pterun/devtools/bundled_program.h"
#include "pterun/executor/runner.h"
#include "pterun/kernels/common/dtype_util.h"
#include "tests/cpp/program_walk.h"

namespace pterun::test {
namespace {

using Clock = std::chrono::steady_clock;

// False when a method would allocate more than the limits allow: its
// planned buffers, or any tensor that is not a constant (planned, written
// by a kernel into memory of its own, or an input).
bool fits(const format::MethodDesc& m, const RunLimits& limits) {
  uint64_t planned = 0;
  for (uint64_t s : m.buffer_sizes) {
    planned += s;
    if (s > limits.max_planned_bytes || planned > limits.max_planned_bytes) return false;
  }
  for (const auto& v : m.values) {
    if (v.kind == ValueKind::Tensor && !v.tensor->is_constant() &&
        v.tensor->nbytes > limits.max_tensor_bytes) {
      return false;
    }
  }
  return true;
}

uint64_t next_random(uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

// Element `i` of the fill: small integers, random bytes or a ramp.
void fill(uint8_t* data, DType dtype, uint64_t numel, uint8_t how, uint64_t seed) {
  const size_t bytes = numel * element_size(dtype);
  if (how == 0 || bytes == 0) return;  // HostBuffer memory is zero
  if (how == 2) {
    uint64_t state = seed | 1;
    for (size_t b = 0; b < bytes; ++b) data[b] = static_cast<uint8_t>(next_random(state));
    return;
  }
  try {
    kernels::visit(dtype, kernels::Family::RealHBBF16, "fuzz", [&]<typename T>() {
      T* p = reinterpret_cast<T*>(data);
      for (uint64_t i = 0; i < numel; ++i) {
        const double v = how == 1 ? static_cast<double>(i % 7) - 3
                                  : static_cast<double>(numel - i) - static_cast<double>(numel) / 2;
        p[i] = kernels::convert<T>(v);
      }
    });
  } catch (const Error&) {  // complex, float8, quantised: bytes
    for (size_t b = 0; b < bytes; ++b) data[b] = static_cast<uint8_t>(b * 37 + 11);
  }
}

// One call's inputs: tensors in memory this object owns.
struct Inputs {
  std::vector<InputArg> args;
  std::vector<std::vector<int64_t>> sizes, strides;
  std::vector<HostBuffer> memory;
};

// Inputs of the declared kinds; false when one cannot be made within the
// limits.
bool make_inputs(const format::MethodDesc& m, InputRecipe recipe, const RunLimits& limits,
                 Inputs& out) {
  const size_t n = m.inputs.size();
  out.args.resize(n);
  out.sizes.resize(n);
  out.strides.resize(n);
  out.memory.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const format::ValueDesc& v = m.values[m.inputs[i]];
    InputArg& a = out.args[i];
    switch (v.kind) {
      case ValueKind::Int: a = InputArg::from_int(v.int_value); continue;
      case ValueKind::Double: a = InputArg::from_double(v.double_value); continue;
      case ValueKind::Bool: a = InputArg::from_bool(v.bool_value); continue;
      case ValueKind::String:
        a.kind = ValueKind::String;
        a.string_value = v.string_value;
        continue;
      case ValueKind::Tensor: break;
      default: a = InputArg::none(); continue;
    }
    const format::TensorDesc& t = *v.tensor;
    std::vector<int64_t>& sizes = out.sizes[i];
    sizes = t.sizes;
    if (t.dynamism != ShapeDynamism::Static) {
      for (size_t d = 0; d < sizes.size(); ++d) {
        if (recipe.shape == 1) sizes[d] = (sizes[d] + 1) / 2;
        if (recipe.shape == 2 && d == 0) sizes[d] = 0;
        if (recipe.shape == 3) sizes[d] = std::min<int64_t>(sizes[d], 1);
      }
    }
    uint64_t numel = 1;
    for (int64_t s : sizes) numel *= static_cast<uint64_t>(s);  // bounded by t.nbytes
    const uint64_t bytes = numel * element_size(t.dtype);
    if (bytes > limits.max_tensor_bytes) return false;
    std::vector<int64_t>& strides = out.strides[i];
    if (recipe.declared_order && t.dim_order.size() == sizes.size()) {
      strides.assign(sizes.size(), 0);
      int64_t step = 1;
      for (size_t k = sizes.size(); k-- > 0;) {
        const size_t d = t.dim_order[k];
        strides[d] = step;
        step *= std::max<int64_t>(sizes[d], 1);
      }
    }
    out.memory[i] = HostBuffer(bytes);
    fill(out.memory[i].data(), t.dtype, numel, recipe.fill, i * 0x9E3779B97F4A7C15ull + numel);
    a = InputArg::tensor(out.memory[i].data(), t.dtype, sizes, strides);
  }
  return true;
}

// Every byte of every output, as a sanitizer sees it.
uint64_t read_outputs(const std::vector<OutputValue>& outputs) {
  uint64_t sum = 0;
  for (const OutputValue& o : outputs) {
    if (const auto* t = std::get_if<TensorResult>(&o)) {
      if (t->data == nullptr) continue;
      // The bytes a strided view reaches, from data on.
      int64_t last = 0;
      bool empty = false;
      for (size_t d = 0; d < t->sizes.size(); ++d) {
        empty = empty || t->sizes[d] == 0;
        last += (t->sizes[d] - 1) * t->strides[d];
      }
      if (empty) continue;
      const auto* p = static_cast<const uint8_t*>(t->data);
      const size_t end = (static_cast<size_t>(last) + 1) * element_size(t->dtype);
      for (size_t b = 0; b < end; ++b) sum += p[b];
    } else if (const auto* s = std::get_if<std::string>(&o)) {
      sum += s->size();
    } else if (const auto* i = std::get_if<int64_t>(&o)) {
      sum += static_cast<uint64_t>(*i);
    }
  }
  return sum;
}

const std::vector<uint8_t>& companion_program() {
  static const std::vector<uint8_t> bytes = [] {
    const char* path = std::getenv("PTERUN_FUZZ_PTE");
    std::ifstream in(path ? path : PTERUN_SOURCE_DIR "/tests/fixtures/external_weights.pte",
                     std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>());
  }();
  return bytes;
}

}  // namespace

uint64_t load_and_run_methods(const std::shared_ptr<const Program>& program, InputRecipe recipe,
                              const RunLimits& limits) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(limits.max_seconds));
  uint64_t sum = 0;
  for (const format::MethodDesc& m : program->desc().methods) {
    if (Clock::now() > deadline) break;
    if (!fits(m, limits)) continue;
    // As it runs: expanded delegates add planned memory of their own.
    try {
      if (!fits(program->runnable_method(m.name), limits)) continue;
    } catch (const Error&) {
      continue;
    }
    std::shared_ptr<MethodRunner> runner;
    try {
      runner = MethodRunner::create(Method::load(program, m.name));
    } catch (const Error&) {
      continue;
    }
    Inputs inputs;
    if (!make_inputs(m, recipe, limits, inputs)) continue;
    for (bool clone : {true, false}) {
      if (!clone && Clock::now() > deadline) break;
      try {
        sum += read_outputs(runner->call(inputs.args, clone));
      } catch (const Error&) {
        sum += 1;
      }
    }
  }
  return sum;
}

uint64_t verify_bundled_cases(std::span<const uint8_t> bytes, const RunLimits& limits) {
  std::shared_ptr<const BundledProgram> bundle;
  try {
    bundle = BundledProgram::load(format::DataBuffer::copy_of(bytes));
  } catch (const Error&) {
    return 0;  // not a bundle, or a damaged one
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(limits.max_seconds));
  uint64_t sum = 0;
  for (const auto& suite : bundle->suites()) {
    if (Clock::now() > deadline) break;
    const format::MethodDesc* desc = nullptr;
    for (const auto& m : bundle->program()->desc().methods) {
      if (m.name == suite.method_name) desc = &m;
    }
    if (desc == nullptr || !fits(*desc, limits)) continue;
    std::unique_ptr<Method> method;
    try {
      method = Method::load(bundle->program(), suite.method_name);
    } catch (const Error&) {
      continue;
    }
    for (size_t i = 0; i < suite.cases.size() && Clock::now() <= deadline; ++i) {
      try {
        CaseResult r = run_case(*method, suite.cases[i], i, kBundledRtol, kBundledAtol);
        sum += r.passed + 2 * r.compared + r.message.size();
      } catch (const Error&) {
        sum += 1;
      }
    }
  }
  return sum;
}

uint64_t run_fuzz_input(std::span<const uint8_t> data) {
  if (data.empty()) return 0;
  std::span<const uint8_t> body = data.subspan(1);
  uint64_t sum = 0;
  try {
    std::shared_ptr<const Program> program;
    if (data[0] % 2 == 0) {
      program = Program::load(format::DataBuffer::copy_of(body));
    } else {
      program = Program::load(format::DataBuffer::copy_of(companion_program()),
                              format::DataBuffer::copy_of(body));
    }
    sum += walk_program(*program);
    sum += load_and_run_methods(program, InputRecipe::from_byte(data[0] >> 1));
    if (data[0] % 2 == 0) sum += verify_bundled_cases(body, RunLimits{});
  } catch (const Error&) {
  }
  return sum;
}

}  // namespace pterun::test
