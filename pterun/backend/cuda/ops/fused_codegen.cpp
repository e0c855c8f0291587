// Generated fused elementwise kernels (fused_codegen.h).
//
// A kernel is fixed by the program's structure (kinds, op codes,
// registers, rounding), the dtypes, each input's kind of access, the
// walk's rank, the elements a thread carries and the index width; the
// scalars, pointers, sizes and strides are parameters (FusedParams), so
// programs that differ only in those share one kernel. Kernels are kept
// per such key for the process, with their libraries.
//
// Each step is one expression of the float_fns.cuh functions, or of the
// operator's plain arithmetic as its functor writes it
// (binary_functors.cuh), ended by jit::settle: the rounding to the step's
// dtype. NVRTC compiles without fma contraction (jit/nvrtc.cpp), as the
// operators' kernels are built, so no fma spans two steps.

#include "pterun/backend/cuda/ops/fused_codegen.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/device/fused_params.h"
#include "pterun/backend/cuda/jit/kernel_cache.h"
#include "pterun/core/str_cat.h"

namespace pterun::kernels::cuda_ops {
namespace {

using ops::ActivationFn;
using ops::BinaryFn;
using ops::FusedKind;
using ops::ScalarFn;
using ops::UnaryFn;

static_assert(cuda::kJitMaxInputs == ops::kFusedMaxInputs);
static_assert(cuda::kJitMaxSteps == ops::kFusedMaxSteps);

constexpr unsigned kThreads = 256;
constexpr const char* kKernelName = "pterun_fused";

enum class Mode { Off, On, Require };

Mode mode() {
  static const Mode m = [] {
    const char* v = std::getenv("PTERUN_FUSED_JIT");
    if (v == nullptr) return Mode::On;
    const std::string_view s(v);
    if (s == "0" || s == "off") return Mode::Off;
    return s == "require" ? Mode::Require : Mode::On;
  }();
  return m;
}

/// fused_prelude.cuh's storage code of a dtype the front-end admits.
int storage(DType d) {
  return d == DType::Float16 ? 1 : d == DType::BFloat16 ? 2 : 0;
}

const char* unary_name(UnaryFn fn) {
  switch (fn) {
#define PTERUN_FLOAT_FN(name) \
  case UnaryFn::name: return #name;
    PTERUN_FLOAT_UNARY_FNS(PTERUN_FLOAT_FN)
#undef PTERUN_FLOAT_FN
    case UnaryFn::Neg: return "Neg";
    default: return "Abs";  // the front-end admits no other
  }
}

const char* activation_name(ActivationFn fn) {
  switch (fn) {
    case ActivationFn::Relu: return "Relu";
    case ActivationFn::Silu: return "Silu";
    case ActivationFn::Hardsigmoid: return "Hardsigmoid";
    case ActivationFn::Hardswish: return "Hardswish";
    case ActivationFn::Gelu: return "Gelu";
    default: return "GeluTanh";
  }
}

/// Step j's value from registers x (and y), its scalars p.s0[j], p.s1[j]
/// and integer p.mode[j].
std::string expression(const DeviceStep& s, int j, const std::string& x, const std::string& y) {
  const std::string s0 = str_cat("p.s0[", j, "]");
  const std::string s1 = str_cat("p.s1[", j, "]");
  const std::string m = str_cat("p.mode[", j, "]");
  switch (s.kind) {
    case FusedKind::Unary:
      return str_cat("fns::", unary_name(static_cast<UnaryFn>(s.fn)), "(", x, ")");
    case FusedKind::Activation:
      return str_cat("fns::", activation_name(static_cast<ActivationFn>(s.fn)), "(", x, ")");
    case FusedKind::Binary:
      switch (static_cast<BinaryFn>(s.fn)) {
        case BinaryFn::Add: return str_cat(x, " + ", y);
        case BinaryFn::AddAlpha: return str_cat(x, " + ", s0, " * ", y);
        case BinaryFn::Sub: return str_cat(x, " - ", y);
        case BinaryFn::SubAlpha: return str_cat(x, " - ", s0, " * ", y);
        case BinaryFn::Mul: return str_cat(x, " * ", y);
        case BinaryFn::Div: return str_cat(x, " / ", y);
        case BinaryFn::Maximum: return str_cat("dmath::max_nan(", x, ", ", y, ")");
        case BinaryFn::Minimum: return str_cat("dmath::min_nan(", x, ", ", y, ")");
        default: return str_cat("dmath::pow(", x, ", ", y, ")");  // Pow
      }
    case FusedKind::Scalar:
      switch (static_cast<ScalarFn>(s.fn)) {
        case ScalarFn::Add: return str_cat(x, " + ", s0);
        case ScalarFn::Sub: return str_cat(x, " - ", s0);
        case ScalarFn::Rsub: return str_cat(s0, " - ", s1, " * ", x);
        case ScalarFn::Mul: return str_cat(x, " * ", s0);
        case ScalarFn::Div: return str_cat(x, " / ", s0);
        default: return str_cat("fns::pow_scalar(", x, ", ", s0, ", ", m, ")");  // the pows
      }
    case FusedKind::Clamp: return str_cat("fns::clamp(", x, ", ", s0, ", ", s1, ", ", m, " != 0)");
    case FusedKind::Cast: return x;
  }
  return x;
}

/// What fixes a kernel: see the file comment.
struct Shape {
  int arch = 0;
  int vec = 4;        // elements a thread carries
  bool wide = false;  // 64-bit walk indices
  int rank = 0;
  DType out = DType::Float32;
  DType in[ops::kFusedMaxInputs] = {};
  char access[ops::kFusedMaxInputs] = {};
  size_t inputs = 0;
};

std::string source(const DeviceProgram& program, const Shape& shape) {
  const size_t n = shape.inputs;
  std::string src = str_cat(
      "#include \"pterun/backend/cuda/ops/fused_prelude.cuh\"\n"
      "namespace fns = pterun::cuda::fns;\n"
      "namespace dmath = pterun::cuda::dmath;\n"
      "namespace jit = pterun::cuda::jit;\n"
      "extern \"C\" __global__ void __launch_bounds__(",
      kThreads, ") ", kKernelName, "(const __grid_constant__ pterun::cuda::FusedParams p) {\n",
      "  constexpr int V = ", shape.vec, ";\n",
      "  using I = ", shape.wide ? "long long" : "unsigned", ";\n",
      "  const long long groups = (p.n + V - 1) / V;\n"
      "  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;\n"
      "  for (long long g = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; "
      "g < groups; g += stride) {\n"
      "    const long long i0 = g * V;\n"
      "    const int count = p.n - i0 < V ? static_cast<int>(p.n - i0) : V;\n"
      "    const bool full = count == V && p.vec != 0;\n");
  for (size_t k = 0; k < n; ++k) {
    const int st = storage(shape.in[k]);
    switch (shape.access[k]) {
      case 'd':
        src += str_cat("    float in", k, "[V];\n    if (full) jit::loadv<", st, ", V>(p.in[", k,
                       "], i0, in", k,
                       ");\n    else\n#pragma unroll\n    for (int e = 0; e < V; ++e) in", k,
                       "[e] = e < count ? jit::load1<", st, ">(p.in[", k, "], i0 + e) : 0.f;\n");
        break;
      case 's':
        src += str_cat(
            "    const float one", k, " = jit::load1<", st, ">(p.in[", k, "], 0);\n    float in", k,
            "[V];\n#pragma unroll\n    for (int e = 0; e < V; ++e) in", k, "[e] = one", k, ";\n");
        break;
      default:
        src += str_cat("    float in", k, "[V];\n    {\n      long long off[V];\n",
                       "      jit::offsets<", shape.rank, ", I>(p, ", k, ", i0, count, off);\n",
                       "#pragma unroll\n      for (int e = 0; e < V; ++e) in", k,
                       "[e] = e < count ? jit::load1<", st, ">(p.in[", k,
                       "], off[e]) : 0.f;\n    }\n");
        break;
    }
  }
  src += "    float res[V];\n#pragma unroll\n    for (int e = 0; e < V; ++e) {\n";
  for (size_t k = 0; k < n; ++k) src += str_cat("      const float r", k, " = in", k, "[e];\n");
  for (int j = 0; j < program.count; ++j) {
    const DeviceStep& s = program.steps[j];
    const std::string x = str_cat("r", static_cast<int>(s.a));
    const std::string y = str_cat("r", static_cast<int>(s.b));
    src += str_cat("      const float r", n + j, " = jit::settle<", storage(s.round), ">(",
                   expression(s, j, x, y), ");\n");
  }
  src += str_cat("      res[e] = r", n + program.count - 1, ";\n    }\n");
  const int so = storage(shape.out);
  src += str_cat("    if (full) jit::storev<", so,
                 ", V>(p.out, i0, res);\n    else\n#pragma unroll\n    for (int e = 0; e < V; ++e) "
                 "if (e < count) jit::store1<",
                 so, ">(p.out, i0 + e, res[e]);\n  }\n}\n");
  return src;
}

/// The cache key: every field of Shape and the program's structure.
std::string key(const DeviceProgram& program, const Shape& shape) {
  std::string k;
  auto put = [&k](int v) { k.push_back(static_cast<char>(v)); };
  put(shape.arch);
  put(shape.vec);
  put(shape.wide);
  put(shape.rank);
  put(storage(shape.out));
  for (size_t i = 0; i < shape.inputs; ++i) {
    put(storage(shape.in[i]));
    put(shape.access[i]);
  }
  for (int j = 0; j < program.count; ++j) {
    const DeviceStep& s = program.steps[j];
    put(static_cast<int>(s.kind));
    put(s.fn);
    put(s.a);
    put(s.b);
    put(storage(s.round));
  }
  return k;
}

struct Compiled {
  cudaKernel_t kernel = nullptr;
  std::string error;  // why there is none
};

/// The kernel for a key, compiled on first use; kept with its library for
/// the process (a library is loaded into each GPU's context as it is
/// used there).
const Compiled& compiled(const DeviceProgram& program, const Shape& shape) {
  static std::mutex mutex;
  static std::unordered_map<std::string, Compiled> cache;
  std::string k = key(program, shape);
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  Compiled c;
  try {
    const std::string cubin =
        cuda::jit::compile_cached(source(program, shape), "pterun_fused.cu", shape.arch);
    cudaLibrary_t library = nullptr;
    PTERUN_CUDA_CHECK(
        cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    PTERUN_CUDA_CHECK(cudaLibraryGetKernel(&c.kernel, library, kKernelName));
  } catch (const Error& e) {
    c.kernel = nullptr;
    c.error = e.what();
  }
  return cache.emplace(std::move(k), std::move(c)).first->second;
}

/// Compute capability (e.g. 90) of a GPU, asked once per GPU.
int arch_of(int device) {
  constexpr int kMaxDevices = 64;
  static int known[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) return 0;
  int& a = known[device];
  if (a == 0) {
    int major = 0;
    int minor = 0;
    PTERUN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    PTERUN_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    a = major * 10 + minor;
  }
  return a;
}

}  // namespace

std::string generated_source(const DeviceProgram& program, std::span<const DType> inputs,
                             std::span<const char> access, DType out, int rank) {
  Shape shape;
  shape.out = out;
  shape.rank = rank;
  shape.inputs = inputs.size();
  for (size_t k = 0; k < inputs.size() && k < ops::kFusedMaxInputs; ++k) {
    shape.in[k] = inputs[k];
    shape.access[k] = access[k];
  }
  return source(program, shape);
}

bool launch_generated(const KernelContext& ctx, const DeviceProgram& program,
                      std::span<const Tensor* const> inputs, Tensor& out, const FusedWalk& walk,
                      const char* op) {
  if (mode() == Mode::Off) return false;
  const size_t rank = walk.sizes.size();
  if (rank > static_cast<size_t>(cuda::kJitMaxRank) || inputs.size() > ops::kFusedMaxInputs) {
    return false;
  }
  // Out must be dense in its walk: the kernel writes element i at offset i.
  int64_t dense = 1;
  for (size_t d = rank; d-- > 0;) {
    if (walk.strides[0][d] != dense) return false;
    dense *= walk.sizes[d];
  }
  const int64_t n = out.numel();
  Shape shape;
  shape.arch = arch_of(cuda::device(ctx));
  shape.rank = static_cast<int>(rank);
  shape.out = out.dtype();
  shape.inputs = inputs.size();
  shape.wide = n > int64_t{0xFFFFFFFF};
  bool narrow = storage(out.dtype()) != 0;  // every dense operand 16-bit: 8 elements a thread
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int64_t* s = walk.strides[k + 1];
    bool same = true;
    bool zero = true;
    for (size_t d = 0; d < rank; ++d) {
      same = same && s[d] == walk.strides[0][d];
      zero = zero && s[d] == 0;
    }
    shape.in[k] = inputs[k]->dtype();
    shape.access[k] = zero ? 's' : same ? 'd' : 'w';
    if (shape.access[k] == 'd') narrow = narrow && storage(inputs[k]->dtype()) != 0;
  }
  shape.vec = narrow ? 8 : 4;

  const Compiled& c = compiled(program, shape);
  if (c.kernel == nullptr) {
    PTERUN_CHECK(mode() != Mode::Require, ErrorCode::NotSupported, op,
                 ": no generated kernel (PTERUN_FUSED_JIT=require): ", c.error);
    return false;
  }

  cuda::FusedParams p{};
  p.n = n;
  p.out = out.data();
  bool vec = cuda::aligned(out.data(), shape.vec * element_size(out.dtype()));
  for (size_t k = 0; k < inputs.size(); ++k) {
    p.in[k] = inputs[k]->data();
    if (shape.access[k] == 'd') {
      vec = vec && cuda::aligned(inputs[k]->data(), shape.vec * element_size(inputs[k]->dtype()));
    }
    for (size_t d = 0; d < rank; ++d) p.stride[k][d] = walk.strides[k + 1][d];
  }
  for (size_t d = 0; d < rank; ++d) p.size[d] = walk.sizes[d];
  for (int j = 0; j < program.count; ++j) {
    const DeviceStep& s = program.steps[j];
    p.s0[j] = s.s0;
    p.s1[j] = s.s1;
    p.mode[j] = s.kind == FusedKind::Clamp ? int{s.nan} : int{s.pow_mode};
  }
  p.vec = vec ? 1 : 0;
  void* args[] = {&p};
  const long long groups = (n + shape.vec - 1) / shape.vec;
  PTERUN_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(c.kernel),
                                     dim3(cuda::blocks_for(groups, kThreads)), dim3(kThreads), args,
                                     0, cuda::stream(ctx)));
  return true;
}

}  // namespace pterun::kernels::cuda_ops
