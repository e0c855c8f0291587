#include "pterun/backend/cpu/ops/dnnl_util.h"

#include <dnnl_debug.h>
#include <omp.h>

#include <algorithm>
#include <string_view>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/core/half.h"

namespace pterun::cpu::dnnl_util {

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

ThreadScope::ThreadScope(int threads) : previous_(omp_get_max_threads()) {
  changed_ = threads != previous_;
  if (changed_) omp_set_num_threads(threads);
}

ThreadScope::~ThreadScope() {
  if (changed_) omp_set_num_threads(previous_);
}

kernels::KernelContext& range_context() {
  thread_local kernels::KernelContext context;
  return context;
}

bool is_optimized(const char* impl_info) {
  return std::string_view(impl_info).substr(0, 3) != "ref";
}

bool is_direct(const char* impl_info) {
  std::string_view s(impl_info);
  return s.substr(0, 3) != "ref" && s.find("gemm") == std::string_view::npos;
}

dnnl::memory make_memory(const dnnl::memory::desc& md) {
  return dnnl::memory(md, engine(), DNNL_MEMORY_NONE);
}

void execute(const dnnl::primitive& p, std::span<const dnnl_exec_arg_t> args, const char* op) {
  // A CPU stream is stateless; one per thread keeps creation off the hot path.
  thread_local const dnnl::stream stream(engine());
  dnnl_status_t status =
      dnnl_primitive_execute(p.get(), stream.get(), static_cast<int>(args.size()), args.data());
  PTERUN_CHECK(status == dnnl_success, ErrorCode::Internal, op, ": oneDNN execution failed (",
               dnnl_status2str(status), ")");
}

namespace {

template <typename To, typename From>
void convert_range(const From* src, To* dst, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) dst[i] = To(static_cast<float>(src[i]));
}

template <typename From>
void convert_from(const kernels::KernelContext& ctx, const From* src, DType to, void* dst,
                  int64_t n) {
  cpu::parallel_for(ctx, n, 1, [&](int64_t b, int64_t e) {
    switch (to) {
      case DType::Float32: convert_range(src, static_cast<float*>(dst), b, e); break;
      case DType::Float16: convert_range(src, static_cast<Half*>(dst), b, e); break;
      case DType::BFloat16: convert_range(src, static_cast<BFloat16*>(dst), b, e); break;
      default: break;
    }
  });
}

}  // namespace

void convert_flat(const kernels::KernelContext& ctx, DType from, const void* src, DType to,
                  void* dst, int64_t n) {
  if (n <= 0) return;
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n) * element_size(from));
    return;
  }
  PTERUN_CHECK((from == DType::Float32 || from == DType::Float16 || from == DType::BFloat16) &&
                   (to == DType::Float32 || to == DType::Float16 || to == DType::BFloat16),
               ErrorCode::Internal, "oneDNN conversion: unexpected dtypes ", dtype_name(from),
               " -> ", dtype_name(to));
  switch (from) {
    case DType::Float32: convert_from(ctx, static_cast<const float*>(src), to, dst, n); break;
    case DType::Float16: convert_from(ctx, static_cast<const Half*>(src), to, dst, n); break;
    default: convert_from(ctx, static_cast<const BFloat16*>(src), to, dst, n); break;
  }
}

dnnl::memory::data_type data_type(DType d) {
  switch (d) {
    case DType::Float32: return dnnl::memory::data_type::f32;
    case DType::Float16: return dnnl::memory::data_type::f16;
    case DType::BFloat16: return dnnl::memory::data_type::bf16;
    default: throw_error(ErrorCode::Internal, str_cat("oneDNN: no data type for ", dtype_name(d)));
  }
}

}  // namespace pterun::cpu::dnnl_util
