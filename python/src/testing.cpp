// A test hook: builds Values from plain Python descriptions, calls one
// kernel from the registry (CPU, or CUDA with every tensor uploaded) and
// returns what it wrote, or times it. Used by the kernel tests to compare
// every kernel with NumPy, and CUDA kernels with CPU ones (tests/ops),
// without exporting programs.

#include "python/src/testing.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "pterun/backend/cpu/engine/strided_copy.h"
#include "pterun/backend/device.h"
#include "pterun/core/error.h"
#include "pterun/core/logging.h"
#include "pterun/core/value.h"
#include "pterun/executor/method.h"
#include "pterun/kernels/registry.h"
#include "pterun/program/program.h"
#include "python/src/convert.h"

namespace nb = nanobind;

namespace pterun::python {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

/// Owns everything the Values of one call point into.
struct Arena {
  std::deque<Tensor> tensors;
  std::deque<Value> values;  // boxed ints and top-level values
  std::deque<std::vector<Value*>> boxed;
  std::deque<std::vector<Tensor*>> lists;
  std::deque<std::vector<double>> doubles;
  std::deque<std::vector<uint8_t>> bools;
  std::deque<std::string> strings;
  std::vector<std::unique_ptr<void, FreeDeleter>> buffers;
  int cuda = -1;  // the GPU every tensor is uploaded to, -1 for the CPU
  std::deque<backend::DeviceBuffer> device_buffers;

  void* allocate(size_t bytes, uint8_t fill) {
    void* p = std::aligned_alloc(64, (bytes + 64) / 64 * 64);
    std::memset(p, fill, (bytes + 64) / 64 * 64);
    buffers.emplace_back(p);
    return p;
  }
};

// ("tensor", data: bytes (C-contiguous, logical order), dtype: int, shape,
//  dim_order, is_out, dynamic, capacity_shape)
Tensor* make_tensor(Arena& a, const nb::tuple& spec) {
  auto dtype = dtype_from_number(nb::cast<int>(spec[2]));
  PTERUN_CHECK(dtype.has_value(), ErrorCode::InvalidArgument, "testing: bad dtype");
  auto shape = nb::cast<std::vector<int64_t>>(spec[3]);
  auto order = nb::cast<std::vector<uint8_t>>(spec[4]);
  bool is_out = nb::cast<bool>(spec[5]);
  bool dynamic = nb::cast<bool>(spec[6]);
  auto capacity_shape = nb::cast<std::vector<int64_t>>(spec[7]);
  Tensor& t = a.tensors.emplace_back(*dtype, capacity_shape, order,
                                     dynamic ? ShapeDynamism::DynamicBound : ShapeDynamism::Static);
  size_t capacity = t.nbytes();
  void* data = a.allocate(capacity, is_out ? 0xA5 : 0);
  t.set_data(data, capacity);
  t.resize(shape);
  // An out starts as a fill pattern, unless it comes with values (a tensor
  // the kernel updates in place).
  if (!is_out || nb::cast<nb::bytes>(spec[1]).size() > 0) {
    nb::bytes raw = nb::cast<nb::bytes>(spec[1]);
    PTERUN_CHECK(raw.size() == t.nbytes(), ErrorCode::InvalidArgument, "testing: ", raw.size(),
                 " bytes for ", describe(t));
    auto src_strides = contiguous_strides(t.sizes());
    cpu::strided_copy(t.data(), t.strides(), raw.c_str(), src_strides, t.sizes(), t.element_size());
  }
  if (a.cuda >= 0) {
    // The same bytes (layout, out fill) in GPU memory.
    auto& device = a.device_buffers.emplace_back(a.cuda, capacity);
    backend::upload(a.cuda, device.data(), data, capacity);
    t.set_data(device.data(), capacity);
  }
  return &t;
}

Value* make_value(Arena& a, nb::handle item, std::vector<std::pair<size_t, Tensor*>>& outs) {
  nb::tuple spec = nb::cast<nb::tuple>(item);
  std::string kind = nb::cast<std::string>(spec[0]);
  Value v;
  if (kind == "tensor") {
    Tensor* t = make_tensor(a, spec);
    if (nb::cast<bool>(spec[5])) outs.emplace_back(outs.size(), t);
    v = Value::from_tensor(t);
  } else if (kind == "none") {
    v = Value::none();
  } else if (kind == "int") {
    v = Value::from_int(nb::cast<int64_t>(spec[1]));
  } else if (kind == "double") {
    v = Value::from_double(nb::cast<double>(spec[1]));
  } else if (kind == "bool") {
    v = Value::from_bool(nb::cast<bool>(spec[1]));
  } else if (kind == "str") {
    v = Value::from_string(a.strings.emplace_back(nb::cast<std::string>(spec[1])));
  } else if (kind == "int_list") {
    auto& boxes = a.boxed.emplace_back();
    for (auto x : nb::cast<nb::list>(spec[1])) {
      boxes.push_back(&a.values.emplace_back(Value::from_int(nb::cast<int64_t>(x))));
    }
    v = Value::from_int_list(boxes);
  } else if (kind == "double_list") {
    v = Value::from_double_list(a.doubles.emplace_back(nb::cast<std::vector<double>>(spec[1])));
  } else if (kind == "bool_list") {
    auto& b = a.bools.emplace_back();
    for (auto x : nb::cast<nb::list>(spec[1])) b.push_back(nb::cast<bool>(x) ? 1 : 0);
    v = Value::from_bool_list(b);
  } else if (kind == "tensor_list" || kind == "optional_tensor_list") {
    auto& list = a.lists.emplace_back();
    for (auto x : nb::cast<nb::list>(spec[1])) {
      if (x.is_none()) {
        list.push_back(nullptr);
        continue;
      }
      nb::tuple ts = nb::cast<nb::tuple>(x);
      Tensor* t = make_tensor(a, ts);
      if (nb::cast<bool>(ts[5])) outs.emplace_back(outs.size(), t);
      list.push_back(t);
    }
    v = Value::from_tensor_list(list, kind == "optional_tensor_list");
  } else {
    throw_error(ErrorCode::InvalidArgument, "testing: unknown argument kind '" + kind + "'");
  }
  return &a.values.emplace_back(v);
}

nb::object value_result(const Value& v) {
  switch (v.kind()) {
    case ValueKind::Int: return nb::int_(v.to_int());
    case ValueKind::Double: return nb::float_(v.to_double());
    case ValueKind::Bool: return nb::bool_(v.to_bool());
    default: return nb::none();
  }
}

/// One kernel with its arguments built, on the CPU or on a GPU.
struct KernelRun {
  kernels::KernelFn fn = nullptr;
  Arena arena;
  std::vector<Value*> values;
  std::vector<std::pair<size_t, Tensor*>> outs;
  kernels::KernelContext ctx;

  KernelRun(const std::string& name, const nb::list& args, int num_threads,
            const std::string& device) {
    const int cuda = resolve_device(device);
    const Device where = cuda < 0 ? Device::CPU : Device::CUDA;
    const kernels::KernelInfo* info = kernels::KernelRegistry::global().info(name, where);
    PTERUN_CHECK(info != nullptr, ErrorCode::OperatorMissing, "testing: no ", device_name(where),
                 " kernel for '", name, "'");
    fn = info->fn;
    ctx.num_threads = num_threads;
    if (cuda >= 0) {
      ctx.device = Device::CUDA;
      ctx.device_index = cuda;
      ctx.backend = backend::make_cuda_method_state(cuda);
    }
    arena.cuda = cuda;
    for (auto item : args) values.push_back(make_value(arena, item, outs));
    std::vector<ValueKind> kinds;
    for (const Value* v : values) kinds.push_back(v->kind());
    kernels::check_call(*info, name, kinds, "testing: ");
  }

  bool on_gpu() const { return arena.cuda >= 0; }

  /// Runs the kernel once and, on a GPU, waits for it.
  void run() {
    fn(ctx, values);
    if (on_gpu()) backend::synchronize(ctx);
  }
};

// Returns (outs, scalars): outs = [(dtype, shape, bytes)] for every out
// tensor in argument order; scalars = final value of each top-level
// Int/Double/Bool argument (None for others).
nb::tuple call_kernel(const std::string& name, const nb::list& args, int num_threads,
                      const std::string& device) {
  KernelRun k(name, args, num_threads, device);
  {
    nb::gil_scoped_release release;
    k.run();
  }
  nb::list out_list;
  for (auto& [index, t] : k.outs) {
    const void* data = t->data();
    std::vector<uint8_t> device_bytes;
    if (k.on_gpu()) {
      // Out tensors are dense in their dim order: nbytes from data().
      device_bytes.resize(t->nbytes());
      backend::download(k.arena.cuda, device_bytes.data(), data, device_bytes.size());
      data = device_bytes.data();
    }
    std::vector<uint8_t> host(t->nbytes());
    auto dst_strides = contiguous_strides(t->sizes());
    cpu::strided_copy(host.data(), dst_strides, data, t->strides(), t->sizes(), t->element_size());
    nb::list shape;
    for (int64_t s : t->sizes()) shape.append(s);
    out_list.append(
        nb::make_tuple(static_cast<int>(t->dtype()), nb::tuple(shape),
                       nb::bytes(reinterpret_cast<const char*>(host.data()), host.size())));
  }
  nb::list scalars;
  for (Value* v : k.values) scalars.append(value_result(*v));
  return nb::make_tuple(out_list, scalars);
}

// Median seconds per run of the kernel, after 3 warm-up runs: GPU time
// between two events around each launch on a GPU, wall time on the CPU.
double time_kernel(const std::string& name, const nb::list& args, int num_threads,
                   const std::string& device, int iterations) {
  PTERUN_CHECK(iterations > 0, ErrorCode::InvalidArgument, "testing: iterations must be > 0");
  KernelRun k(name, args, num_threads, device);
  nb::gil_scoped_release release;
  for (int i = 0; i < 3; ++i) k.run();
  std::vector<double> seconds;
  seconds.reserve(static_cast<size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    if (k.on_gpu()) {
      seconds.push_back(backend::time_on_stream(k.ctx, [&] { k.fn(k.ctx, k.values); }));
    } else {
      auto start = std::chrono::steady_clock::now();
      k.fn(k.ctx, k.values);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

void init_testing(nb::module_& m) {
  m.def("_testing_call_kernel", &call_kernel, nb::arg("name"), nb::arg("args"),
        nb::arg("num_threads") = 1, nb::arg("device") = "cpu",
        "Test hook: run one kernel on 'cpu' or 'cuda:N' (see pterun._testing).");
  m.def("_testing_time_kernel", &time_kernel, nb::arg("name"), nb::arg("args"),
        nb::arg("num_threads") = 1, nb::arg("device") = "cuda:0", nb::arg("iterations") = 50,
        "Test hook: median seconds per run of one kernel (see pterun._testing).");
  m.def(
      "_testing_quantized_chains",
      [](const std::string& path, const std::string& name) {
        return Method::load(Program::load_file(path, ""), name)->quantized_chains();
      },
      nb::arg("path"), nb::arg("method") = "forward",
      "Test hook: how many quantized chains of a method (CPU) run on integer kernels.");
  m.def(
      "_testing_log",
      [](int level, const std::string& message) { log(static_cast<LogLevel>(level), message); },
      nb::arg("level"), nb::arg("message"),
      "Test hook: a message through the runtime's own log (B24).");
}

}  // namespace pterun::python
