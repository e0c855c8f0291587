#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include <cstring>
#include "cli/commands.h"
#include "cli/npy.h"
#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/threads.h"
#include "pterun/executor/runner.h"
#include "pterun/kernels/common/dtype_util.h"
#include "pterun/kernels/common/strided_copy.h"

namespace pterun::cli {

// "cpu", "cuda" (GPU 0) or "cuda:N".
MethodOptions method_options(const std::string& device) {
  const DeviceSpec spec = parse_device(device);
  MethodOptions options;
  options.device = spec.type;
  options.device_index = spec.index;
  return options;
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Loaded {
  std::shared_ptr<MethodRunner> runner;
  double load_ms = 0;
};

Loaded load(const RunOptions& o) {
  MethodOptions options = method_options(o.device);
  if (o.threads > 0) set_num_threads(o.threads);
  auto start = Clock::now();
  auto program = Program::load_file(o.file, o.data);
  auto method = Method::load(program, o.method, options);
  Loaded l{MethodRunner::create(std::move(method)), 0};
  l.load_ms = ms_since(start);
  return l;
}

// Arrays for the method's inputs: from .npy files, an .npz, or made up
// (seeded random values of the declared shape) when none are given.
std::vector<NpyArray> gather_arrays(const RunOptions& o, const MethodMeta& meta, bool& made_up) {
  std::vector<NpyArray> arrays;
  made_up = false;
  for (const auto& f : o.input_files) arrays.push_back(read_npy(f));
  if (!o.inputs_npz.empty()) {
    auto entries = read_npz(o.inputs_npz);
    if (o.keys.empty()) {
      for (auto& [k, a] : entries) arrays.push_back(std::move(a));
    } else {
      std::stringstream ss(o.keys);
      std::string key;
      while (std::getline(ss, key, ',')) {
        auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const auto& e) { return e.first == key; });
        PTERUN_CHECK(it != entries.end(), ErrorCode::InvalidArgument, "inputs: no key '", key,
                     "' in ", o.inputs_npz);
        arrays.push_back(it->second);
      }
    }
  }
  if (!arrays.empty() || meta.num_inputs() == 0) return arrays;
  made_up = true;
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < meta.num_inputs(); ++i) {
    NpyArray a;
    ValueKind tag = meta.input_tag(i);
    if (tag != ValueKind::Tensor) {
      // Numbers are fixed by the program: use the exported value.
      const auto& v = meta.desc().values[meta.desc().inputs[i]];
      a.shape = {};
      if (tag == ValueKind::Int) {
        a.dtype = DType::Int64;
        a.data.resize(8);
        std::memcpy(a.data.data(), &v.int_value, 8);
      } else if (tag == ValueKind::Double) {
        a.dtype = DType::Float64;
        a.data.resize(8);
        std::memcpy(a.data.data(), &v.double_value, 8);
      } else {
        a.dtype = DType::Bool;
        a.data = {static_cast<uint8_t>(v.bool_value)};
      }
      arrays.push_back(std::move(a));
      continue;
    }
    TensorInfo t = meta.input_tensor_meta(i);
    a.dtype = t.dtype;
    a.shape = t.sizes;
    a.data.resize(t.nbytes);
    size_t n = element_size(t.dtype) == 0 ? 0 : t.nbytes / element_size(t.dtype);
    kernels::visit(t.dtype, kernels::Family::RealHBBF16, "random input", [&]<typename T>() {
      T* p = reinterpret_cast<T*>(a.data.data());
      for (size_t k = 0; k < n; ++k) {
        if constexpr (std::is_same_v<T, bool>) {
          p[k] = normal(rng) > 0;
        } else if constexpr (std::is_integral_v<T>) {
          p[k] = static_cast<T>(std::abs(static_cast<int>(normal(rng) * 4)) % 8);
        } else {
          p[k] = kernels::convert<T>(normal(rng));
        }
      }
    });
    arrays.push_back(std::move(a));
  }
  return arrays;
}

std::vector<InputArg> to_inputs(const std::vector<NpyArray>& arrays, const MethodMeta& meta) {
  PTERUN_CHECK(arrays.size() == meta.num_inputs(), ErrorCode::InvalidArgument, "method '",
               meta.name(), "' takes ", meta.num_inputs(), " inputs, got ", arrays.size());
  std::vector<InputArg> args;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const NpyArray& a = arrays[i];
    ValueKind tag = meta.input_tag(i);
    if (tag == ValueKind::Tensor) {
      args.push_back(InputArg::tensor(a.data.data(), a.dtype, a.shape, a.strides));
      continue;
    }
    PTERUN_CHECK(a.shape.empty(), ErrorCode::InvalidArgument, "input ", i,
                 ": a number input needs a 0-d array");
    double v = 0;
    kernels::visit(a.dtype, kernels::Family::RealHBBF16, "number input", [&]<typename T>() {
      v = kernels::convert<double>(*reinterpret_cast<const T*>(a.data.data()));
    });
    if (tag == ValueKind::Int)
      args.push_back(InputArg::from_int(static_cast<int64_t>(v)));
    else if (tag == ValueKind::Double)
      args.push_back(InputArg::from_double(v));
    else if (tag == ValueKind::Bool)
      args.push_back(InputArg::from_bool(v != 0));
    else
      args.push_back(InputArg::none());
  }
  return args;
}

// A host array of a result; a result on a GPU is copied down first.
NpyArray to_array(const TensorResult& t) {
  std::vector<uint8_t> host;
  const void* src = t.data;
  size_t element = element_size(t.dtype);
  bool empty = false;
  for (int64_t s : t.sizes) empty = empty || s == 0;
  if (t.device_index >= 0 && !empty) {
    int64_t lo = 0, hi = 0;  // element offsets the result spans
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      int64_t span = (t.sizes[d] - 1) * t.strides[d];
      (span < 0 ? lo : hi) += span;
    }
    host.resize(static_cast<size_t>(hi - lo + 1) * element);
    backend::download(t.device_index, host.data(),
                      static_cast<const uint8_t*>(t.data) - static_cast<size_t>(-lo) * element,
                      host.size());
    src = host.data() + static_cast<size_t>(-lo) * element;
  }
  NpyArray a;
  a.dtype = t.dtype;
  a.shape.assign(t.sizes.begin(), t.sizes.end());
  a.data.resize(t.nbytes());
  std::vector<int64_t> contiguous(t.sizes.size());
  int64_t s = 1;
  for (size_t i = t.sizes.size(); i-- > 0;) {
    contiguous[i] = s;
    s *= t.sizes[i] == 0 ? 1 : t.sizes[i];
  }
  if (!empty) kernels::strided_copy(a.data.data(), contiguous, src, t.strides, t.sizes, element);
  a.strides = contiguous;
  return a;
}

std::string summary(const NpyArray& a) {
  std::ostringstream out;
  out << dtype_name(a.dtype) << "[";
  for (size_t i = 0; i < a.shape.size(); ++i) out << (i ? ", " : "") << a.shape[i];
  out << "]";
  size_t n = element_size(a.dtype) ? a.data.size() / element_size(a.dtype) : 0;
  if (n == 0 || a.dtype == DType::Complex64 || a.dtype == DType::Complex128) return out.str();
  std::vector<double> v(n);
  kernels::visit(a.dtype, kernels::Family::All, "summary", [&]<typename T>() {
    const T* p = reinterpret_cast<const T*>(a.data.data());
    for (size_t k = 0; k < n; ++k) v[k] = kernels::convert<double>(p[k]);
  });
  double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  double mean = 0;
  for (double x : v) mean += x / static_cast<double>(n);
  out << std::setprecision(6) << "  min " << lo << "  max " << hi << "  mean " << mean << "  [";
  for (size_t k = 0; k < std::min<size_t>(n, 6); ++k) out << (k ? ", " : "") << v[k];
  out << (n > 6 ? ", ...]" : "]");
  return out.str();
}

}  // namespace

int run_run(const RunOptions& o) {
  Loaded l = load(o);
  const MethodMeta& meta = l.runner->method().meta();
  bool made_up = false;
  auto arrays = gather_arrays(o, meta, made_up);
  if (made_up)
    std::cout << "(no inputs given: using seeded random inputs of the declared shapes)\n";
  auto inputs = to_inputs(arrays, meta);
  auto start = Clock::now();
  auto outputs = l.runner->call(inputs, true);
  double call_ms = ms_since(start);
  std::vector<std::pair<std::string, NpyArray>> saved;
  std::cout << "method '" << meta.name() << "' on " << o.device << ": " << outputs.size()
            << " outputs (load " << std::fixed << std::setprecision(2) << l.load_ms << " ms, call "
            << call_ms << " ms)\n";
  std::cout.unsetf(std::ios::fixed);
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::cout << "  output " << i << ": ";
    std::visit(
        [&](auto&& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, TensorResult>) {
            NpyArray a = to_array(v);
            std::cout << "Tensor " << summary(a) << "\n";
            saved.emplace_back("output_" + std::to_string(i), std::move(a));
          } else if constexpr (std::is_same_v<V, std::monostate>) {
            std::cout << "None\n";
          } else if constexpr (std::is_same_v<V, std::string>) {
            std::cout << "String '" << v << "'\n";
          } else if constexpr (std::is_same_v<V, bool>) {
            std::cout << "Bool " << (v ? "True" : "False") << "\n";
          } else {
            std::cout << (std::is_same_v<V, double> ? "Double " : "Int ") << v << "\n";
          }
        },
        outputs[i]);
  }
  if (!o.output.empty()) {
    write_npz(o.output, saved);
    std::cout << "saved " << saved.size() << " tensor outputs to " << o.output << "\n";
  }
  return 0;
}

int run_bench(const RunOptions& o) {
  Loaded l = load(o);
  const MethodMeta& meta = l.runner->method().meta();
  bool made_up = false;
  auto arrays = gather_arrays(o, meta, made_up);
  auto inputs = to_inputs(arrays, meta);
  auto start = Clock::now();
  l.runner->call(inputs, true);
  double first_ms = ms_since(start);
  for (int i = 0; i < o.warmup; ++i) l.runner->call(inputs, true);
  int iterations = o.iterations;
  if (iterations <= 0) {
    start = Clock::now();
    l.runner->call(inputs, true);
    double one = std::max(ms_since(start), 1e-4);
    iterations = static_cast<int>(std::clamp(1000.0 / one, 20.0, 100000.0));
  }
  std::vector<double> times(iterations);
  for (int i = 0; i < iterations; ++i) {
    start = Clock::now();
    l.runner->call(inputs, true);
    times[i] = ms_since(start);
  }
  std::sort(times.begin(), times.end());
  auto pct = [&](double p) { return times[static_cast<size_t>(p * (times.size() - 1))]; };
  std::cout << std::fixed << std::setprecision(4) << o.file << " method '" << meta.name() << "' on "
            << o.device << ", " << get_num_threads() << " threads"
            << (made_up ? ", random inputs" : "") << "\n"
            << "  load        " << l.load_ms << " ms\n"
            << "  first call  " << first_ms << " ms\n"
            << "  median      " << pct(0.5) << " ms  (" << iterations << " calls)\n"
            << "  p90         " << pct(0.9) << " ms\n"
            << "  min         " << times.front() << " ms\n";
  return 0;
}

}  // namespace pterun::cli
