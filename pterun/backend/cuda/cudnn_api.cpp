// cudnn_api.h: libcudnn.so.9 loaded once per process, its entry points
// looked up by name, and a handle per method on the method's stream.

#include "pterun/backend/cuda/cudnn_api.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/cuda_library.h"
#include "pterun/backend/cuda/cuda_state.h"
#include "pterun/core/error.h"
#include "pterun/core/str_cat.h"

namespace pterun::cuda::cudnn {
namespace {

constexpr const char* kLibrary = "libcudnn.so.9";

struct Loaded {
  Api api;
  bool ok = false;
  std::string why;
};

template <typename F>
bool resolve(void* lib, F& f, const char* name, std::string& why) {
  return find_function(lib, kLibrary, name, f, why);
}

Loaded load() {
  Loaded l;
  const char* env = std::getenv("PTERUN_CUDNN");
  if (env != nullptr && std::strcmp(env, "0") == 0) {
    l.why = "turned off by PTERUN_CUDNN=0";
    return l;
  }
  void* lib = open_cuda_library(kLibrary, PTERUN_CUDA_BUILD_LIBDIRS, l.why);
  if (lib == nullptr) return l;
  l.why.clear();
  Api& a = l.api;
  bool ok = resolve(lib, a.error_string, "cudnnGetErrorString", l.why);
  ok = ok && resolve(lib, a.create, "cudnnCreate", l.why);
  ok = ok && resolve(lib, a.destroy, "cudnnDestroy", l.why);
  ok = ok && resolve(lib, a.set_stream, "cudnnSetStream", l.why);
  ok = ok && resolve(lib, a.create_tensor, "cudnnCreateTensorDescriptor", l.why);
  ok = ok && resolve(lib, a.set_tensor_4d_ex, "cudnnSetTensor4dDescriptorEx", l.why);
  ok = ok && resolve(lib, a.destroy_tensor, "cudnnDestroyTensorDescriptor", l.why);
  ok = ok && resolve(lib, a.create_filter, "cudnnCreateFilterDescriptor", l.why);
  ok = ok && resolve(lib, a.set_filter_4d, "cudnnSetFilter4dDescriptor", l.why);
  ok = ok && resolve(lib, a.destroy_filter, "cudnnDestroyFilterDescriptor", l.why);
  ok = ok && resolve(lib, a.create_conv, "cudnnCreateConvolutionDescriptor", l.why);
  ok = ok && resolve(lib, a.set_conv_2d, "cudnnSetConvolution2dDescriptor", l.why);
  ok = ok && resolve(lib, a.set_group_count, "cudnnSetConvolutionGroupCount", l.why);
  ok = ok && resolve(lib, a.set_math_type, "cudnnSetConvolutionMathType", l.why);
  ok = ok && resolve(lib, a.destroy_conv, "cudnnDestroyConvolutionDescriptor", l.why);
  ok = ok && resolve(lib, a.forward_algorithms, "cudnnGetConvolutionForwardAlgorithm_v7", l.why);
  ok = ok && resolve(lib, a.find_algorithms, "cudnnFindConvolutionForwardAlgorithmEx", l.why);
  ok = ok && resolve(lib, a.forward, "cudnnConvolutionForward", l.why);
  ok = ok && resolve(lib, a.add_tensor, "cudnnAddTensor", l.why);
  l.ok = ok;
  // The backend API, all or nothing.
  std::string missing;
  const bool graph = resolve(lib, a.create_backend, "cudnnBackendCreateDescriptor", missing) &&
                     resolve(lib, a.destroy_backend, "cudnnBackendDestroyDescriptor", missing) &&
                     resolve(lib, a.finalize, "cudnnBackendFinalize", missing) &&
                     resolve(lib, a.set_attribute, "cudnnBackendSetAttribute", missing) &&
                     resolve(lib, a.get_attribute, "cudnnBackendGetAttribute", missing) &&
                     resolve(lib, a.execute, "cudnnBackendExecute", missing);
  if (!graph) a.create_backend = nullptr;
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Api* api(std::string* why) {
  const Loaded& l = loaded();
  if (why != nullptr) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

void check(const Api& a, Status status, const char* what) {
  PTERUN_CHECK(status == 0, ErrorCode::Internal, "cuDNN: ", what,
               " failed: ", a.error_string(status));
}

Handle handle(kernels::KernelContext& context) {
  const Api* a = api();
  if (a == nullptr) return nullptr;
  MethodState& s = state(context);
  if (s.cudnn == nullptr) {
    PTERUN_CUDA_CHECK(cudaSetDevice(s.device));
    Handle h = nullptr;
    check(*a, a->create(&h), "cudnnCreate");
    s.cudnn = std::shared_ptr<void>(h, [a](void* p) { a->destroy(static_cast<Handle>(p)); });
    check(*a, a->set_stream(h, s.stream), "cudnnSetStream");
  }
  return static_cast<Handle>(s.cudnn.get());
}

}  // namespace pterun::cuda::cudnn
