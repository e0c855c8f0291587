// fastest_conv (conv_choice.h): the per-problem choice between cuDNN's
// convolution and pterun's own (conv_tiled.cu, conv_warp.cu).

#include "pterun/backend/cuda/ops/conv_choice.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/ops/time_runs.h"
#include "pterun/backend/cuda/plan_key.h"

namespace pterun::cuda::nn {
namespace {

/// Multiply-adds below which a problem met first inside a capture goes to
/// pterun's kernel (the sizes where it won on an H100).
constexpr int64_t kSmallWork = int64_t{1} << 24;

constexpr float kNever = std::numeric_limits<float>::infinity();

struct Key {
  int64_t device, dtype, tf32, fused, activation, bias, residual;
  int64_t groups, n, ic, oc, ih, iw, oh, ow, kh, kw;
  int64_t stride[2], pad[2], dilation[2];
  int64_t in_strides[4], w_strides[4], out_strides[4], residual_strides[4];
};

Key key_of(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused) {
  Key k;
  std::memset(&k, 0, sizeof k);
  k.device = device(ctx);
  k.dtype = static_cast<int64_t>(q.dtype);
  k.tf32 = ctx.allow_tf32 ? 1 : 0;
  k.fused = fused ? 1 : 0;
  k.activation = fused ? static_cast<int64_t>(q.activation) : 0;
  k.bias = q.bias != nullptr ? 1 : 0;
  k.residual = fused && q.residual != nullptr ? 1 : 0;
  k.groups = q.groups;
  k.n = q.n;
  k.ic = q.ic;
  k.oc = q.oc;
  k.ih = q.ih;
  k.iw = q.iw;
  k.oh = q.oh;
  k.ow = q.ow;
  k.kh = q.kh;
  k.kw = q.kw;
  for (int i = 0; i < 2; ++i) {
    k.stride[i] = q.stride[i];
    k.pad[i] = q.pad[i];
    k.dilation[i] = q.dilation[i];
  }
  for (int i = 0; i < 4; ++i) {
    k.in_strides[i] = q.in_strides[i];
    k.w_strides[i] = q.w_strides[i];
    k.out_strides[i] = q.out_strides[i];
    k.residual_strides[i] = k.residual != 0 ? q.residual_strides[i] : 0;
  }
  return k;
}

/// PTERUN_CONV_OWN: 0, 1 or 2 (which run), else -1 (time).
int forced() {
  static const int value = [] {
    const char* env = std::getenv("PTERUN_CONV_OWN");
    if (env == nullptr) return -1;
    for (const char* v : {"0", "1", "2"}) {
      if (std::strcmp(env, v) == 0) return v[0] - '0';
    }
    return -1;
  }();
  return value;
}

bool small(const ops::ConvProblem& q) {
  return q.n * q.oc * q.oh * q.ow * (q.ic / q.groups) * q.kh * q.kw <= kSmallWork;
}

bool capturing(kernels::KernelContext& ctx) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream(ctx), &capture) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return capture != cudaStreamCaptureStatusNone;
}

}  // namespace

bool own_conv_allowed() {
  return forced() != 0;
}

size_t fastest_conv(kernels::KernelContext& ctx, const ops::ConvProblem& q, bool fused,
                    std::span<const ConvRun> runs) {
  if (runs.size() < 2) return 0;
  if (const int f = forced(); f >= 0) return std::min(static_cast<size_t>(f), runs.size() - 1);
  const Key key = key_of(ctx, q, fused);
  // Read on every call, written once per problem.
  static std::shared_mutex mutex;
  // Kept for the process, like cuDNN's plans: never destroyed.
  static auto* chosen = new std::unordered_map<Key, size_t, BytesHash<Key>, BytesEqual<Key>>();
  {
    const std::shared_lock<std::shared_mutex> lock(mutex);
    if (auto it = chosen->find(key); it != chosen->end() && it->second < runs.size()) {
      return it->second;
    }
  }
  if (capturing(ctx)) return small(q) ? 1 : 0;
  // The vendor's first run makes its plan (cuDNN times its algorithms
  // then); time_runs warms each path up before it times three runs. The
  // output is written by the runs and then by the real call.
  const cudaStream_t s = stream(ctx);
  size_t best = 0;
  float best_time = kNever;
  float times[4] = {kNever, kNever, kNever, kNever};
  for (size_t i = 0; i < runs.size(); ++i) {
    const float t = time_runs(s, [&] {
      runs[i](ctx, q);
      return 0;
    });
    if (i < 4) times[i] = t;
    if (t < best_time) {
      best_time = t;
      best = i;
    }
  }
  // PTERUN_CUDNN_LOG=1: each problem's timings on stderr.
  static const bool log = std::getenv("PTERUN_CUDNN_LOG") != nullptr;
  if (log) {
    std::fprintf(stderr,
                 "pterun conv %ldx%ldx%ldx%ld -> %ld, %ldx%ld /%ld, dtype %d%s%s: vendor %.2f us, "
                 "tiled %.2f us, warp %.2f us: %zu\n",
                 static_cast<long>(q.n), static_cast<long>(q.ic), static_cast<long>(q.ih),
                 static_cast<long>(q.iw), static_cast<long>(q.oc), static_cast<long>(q.kh),
                 static_cast<long>(q.kw), static_cast<long>(q.groups), static_cast<int>(q.dtype),
                 q.in_strides[1] == 1 ? " cl" : "", fused ? " fused" : "", times[0] * 1e3,
                 times[1] * 1e3, times[2] * 1e3, best);
  }
  // All failing (events refused): decide without keeping the answer.
  if (!(best_time < kNever)) return small(q) ? 1 : 0;
  const std::unique_lock<std::shared_mutex> lock(mutex);
  chosen->emplace(key, best);
  return best;
}

}  // namespace pterun::cuda::nn
