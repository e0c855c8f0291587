// Convolution through oneDNN. Input and output are described in place with
// their own strides (NCHW or channels-last need no copy when oneDNN has a
// direct kernel for that layout); weights are reordered into the blocked
// format the chosen kernel wants (they may be any dim order) and kept in
// the plan while their bytes stay the same.
// When the plain layouts only get oneDNN's im2col kernel, the output (and
// if need be the input) is reordered from and to its preferred blocked
// format instead: the direct kernels win by more than the reorders cost
// (digits_cnn's [359,1,8,8] first layer: 83 us reading NCHW and writing
// nChw16c, against 318 us for brgconv on NHWC and 304 us for im2col).

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/ops/conv.h"
#include "pterun/backend/cpu/ops/dnnl_util.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;
namespace du = dnnl_util;
using dnnl::memory;

struct ConvPlan {
  bool usable = false;
  bool via_f32 = false;  // no native f16/bf16 kernel: convert around an f32 one
  dnnl::primitive prim;
  memory src, wei, bias, dst, scratchpad;  // in the primitive's formats
  memory src_user, wei_user, dst_user;     // in the tensors' layouts
  dnnl::reorder src_reorder, wei_reorder, dst_reorder;
  bool reorder_src = false, reorder_wei = false, reorder_dst = false;
  size_t src_bytes = 0, wei_bytes = 0, dst_bytes = 0, scratchpad_bytes = 0;
  // Weights kept in the primitive's format between calls (they are almost
  // always constants), with a copy of the bytes they came from: reordered
  // again only when those change.
  memory wei_packed;
  std::vector<char> wei_source;
  const void* wei_source_at = nullptr;
};

/// Largest weights kept packed in a plan.
constexpr size_t kMaxPackedWeightBytes = size_t{1} << 22;

/// Points plan.wei at weights in the primitive's format for `weight`
/// (`bytes` in the tensor's layout): the plan's packed copy, reordered
/// only when the weights differ from last time.
void bind_packed_weights(ConvPlan& plan, const void* weight, size_t bytes, const char* op) {
  if (plan.wei_source_at != weight || plan.wei_source.size() != bytes ||
      std::memcmp(plan.wei_source.data(), weight, bytes) != 0) {
    if (!plan.wei_packed) plan.wei_packed = memory(plan.wei.get_desc(), du::engine());
    du::bind(plan.wei_user, weight);
    const dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, plan.wei_user.get()},
                                     {DNNL_ARG_TO, plan.wei_packed.get()}};
    du::execute(plan.wei_reorder, args, op);
    const char* from = static_cast<const char*>(weight);
    plan.wei_source.assign(from, from + bytes);
    plan.wei_source_at = weight;
  }
  du::bind(plan.wei, plan.wei_packed.get_data_handle());
}

struct UserDescs {
  memory::desc src, wei, bias, dst;
};

UserDescs user_descs(const ConvProblem& p, memory::data_type t) {
  UserDescs u;
  const int64_t* s = p.in_strides;
  const int64_t* o = p.out_strides;
  const int64_t* w = p.w_strides;
  u.src = memory::desc({p.n, p.ic, p.ih, p.iw}, t, {s[0], s[1], s[2], s[3]});
  u.dst = memory::desc({p.n, p.oc, p.oh, p.ow}, t, {o[0], o[1], o[2], o[3]});
  u.bias = memory::desc({p.oc}, t, {1});
  const int64_t g = p.groups;
  // oneDNN's weights are (g,) oc, ic, kh, kw for both directions; torch's
  // transposed weight is [ic, oc/g, kh, kw].
  if (!p.transposed) {
    if (g == 1) {
      u.wei = memory::desc({p.oc, p.ic, p.kh, p.kw}, t, {w[0], w[1], w[2], w[3]});
    } else {
      u.wei = memory::desc({g, p.oc / g, p.ic / g, p.kh, p.kw}, t,
                           {p.oc / g * w[0], w[0], w[1], w[2], w[3]});
    }
  } else {
    if (g == 1) {
      u.wei = memory::desc({p.oc, p.ic, p.kh, p.kw}, t, {w[1], w[0], w[2], w[3]});
    } else {
      u.wei = memory::desc({g, p.oc / g, p.ic / g, p.kh, p.kw}, t,
                           {p.ic / g * w[0], w[1], w[0], w[2], w[3]});
    }
  }
  return u;
}

/// A primitive descriptor for the given src/dst descriptors (weights
/// always "any"), or an empty one when oneDNN refuses.
dnnl::primitive_desc try_pd(const ConvProblem& p, const memory::desc& src, const memory::desc& wei,
                            const memory::desc& dst, const memory::desc& bias) {
  const memory::dims strides{p.stride[0], p.stride[1]};
  const memory::dims dilates{p.dilation[0] - 1, p.dilation[1] - 1};
  const memory::dims pad_l{p.pad[0], p.pad[1]};
  memory::dims pad_r{p.pad[0], p.pad[1]};
  if (p.transposed) pad_r = {p.pad[0] - p.out_pad[0], p.pad[1] - p.out_pad[1]};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const memory::desc any_wei(wei.dims(), wei.data_type(), memory::format_tag::any);
  const bool with_bias = p.bias != nullptr;
  try {
    if (!p.transposed) {
      using C = dnnl::convolution_forward;
      auto d =
          with_bias
              ? C::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                        src, any_wei, bias, dst, strides, dilates, pad_l, pad_r)
              : C::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                        src, any_wei, dst, strides, dilates, pad_l, pad_r);
      return C::primitive_desc(d, attr, du::engine());
    }
    using D = dnnl::deconvolution_forward;
    auto d =
        with_bias
            ? D::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                      src, any_wei, bias, dst, strides, dilates, pad_l, pad_r)
            : D::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                      src, any_wei, dst, strides, dilates, pad_l, pad_r);
    return D::primitive_desc(d, attr, du::engine());
  } catch (const dnnl::error&) {
    return {};
  }
}

const char* impl_of(const dnnl::primitive_desc& pd) {
  return pd ? pd.impl_info_str() : "ref";
}

/// Fills `plan` from the better of: plain layouts as given, or the
/// primitive's preferred layouts with reorders. False if neither is
/// optimised.
bool build(ConvPlan& plan, const ConvProblem& p, memory::data_type t) {
  const UserDescs u = user_descs(p, t);
  // The first direct kernel of: the tensors' own layouts, then oneDNN's
  // choice for dst only (first-layer kernels read plain NCHW and write a
  // blocked layout: one reorder instead of two), for src only, for both.
  // Else the first optimised one.
  const memory::desc any_src(u.src.dims(), t, memory::format_tag::any);
  const memory::desc any_dst(u.dst.dims(), t, memory::format_tag::any);
  const std::pair<const memory::desc*, const memory::desc*> layouts[4] = {
      {&u.src, &u.dst}, {&u.src, &any_dst}, {&any_src, &u.dst}, {&any_src, &any_dst}};
  dnnl::primitive_desc pd;
  for (const auto& [src, dst] : layouts) {
    dnnl::primitive_desc candidate = try_pd(p, *src, u.wei, *dst, u.bias);
    if (du::is_direct(impl_of(candidate))) {
      pd = candidate;
      break;
    }
    if (!du::is_optimized(impl_of(pd))) pd = candidate;
  }
  if (!du::is_optimized(impl_of(pd))) return false;

  const memory::desc src = pd.query_md(dnnl::query::src_md);
  const memory::desc wei = pd.query_md(dnnl::query::weights_md);
  const memory::desc dst = pd.query_md(dnnl::query::dst_md);
  const memory::desc pad = pd.query_md(dnnl::query::scratchpad_md);
  plan.prim = dnnl::primitive(pd);
  plan.src = du::make_memory(src);
  plan.wei = du::make_memory(wei);
  plan.dst = du::make_memory(dst);
  plan.bias = du::make_memory(u.bias);
  plan.scratchpad = du::make_memory(pad);
  plan.scratchpad_bytes = pad.get_size();
  plan.reorder_src = src != u.src;
  plan.reorder_wei = wei != u.wei;
  plan.reorder_dst = dst != u.dst;
  const dnnl::engine& e = du::engine();
  if (plan.reorder_src) {
    plan.src_user = du::make_memory(u.src);
    plan.src_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(e, u.src, e, src));
    plan.src_bytes = src.get_size();
  }
  if (plan.reorder_wei) {
    plan.wei_user = du::make_memory(u.wei);
    plan.wei_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(e, u.wei, e, wei));
    plan.wei_bytes = wei.get_size();
  }
  if (plan.reorder_dst) {
    plan.dst_user = du::make_memory(u.dst);
    plan.dst_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(e, dst, e, u.dst));
    plan.dst_bytes = dst.get_size();
  }
  return true;
}

ConvPlan make_plan(const ConvProblem& p) {
  ConvPlan plan;
  du::ThreadScope scope(1);
  try {
    if (p.dtype != DType::Float32 && build(plan, p, du::data_type(p.dtype))) {
      plan.usable = true;
      return plan;
    }
    plan.via_f32 = p.dtype != DType::Float32;
    plan.usable = build(plan, p, memory::data_type::f32);
  } catch (const dnnl::error&) {
    plan = ConvPlan{};  // e.g. a reorder oneDNN cannot make: our own kernel runs instead
  }
  return plan;
}

int64_t span_of(const int64_t* sizes, const int64_t* strides) {
  int64_t span = 1;
  for (int i = 0; i < 4; ++i) span += (sizes[i] - 1) * strides[i];
  return span;
}

constexpr size_t aligned(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

void run(KernelContext& ctx, const ConvProblem& p, ConvPlan& plan, const char* op) {
  du::ThreadScope scope(1);
  const int64_t in_sizes[4] = {p.n, p.ic, p.ih, p.iw};
  const int64_t out_sizes[4] = {p.n, p.oc, p.oh, p.ow};
  const int64_t w_sizes[4] = {p.transposed ? p.ic : p.oc,
                              p.transposed ? p.oc / p.groups : p.ic / p.groups, p.kh, p.kw};
  const int64_t in_span = span_of(in_sizes, p.in_strides);
  const int64_t out_span = span_of(out_sizes, p.out_strides);
  const int64_t w_span = span_of(w_sizes, p.w_strides);

  // Scratch: [f32 in, weight, bias, out][reordered src, weights, dst][scratchpad].
  size_t sizes[8] = {};
  if (plan.via_f32) {
    sizes[0] = aligned(in_span * 4);
    sizes[1] = aligned(w_span * 4);
    sizes[2] = p.bias != nullptr ? aligned(p.oc * 4) : 0;
    sizes[3] = aligned(out_span * 4);
  }
  sizes[4] = aligned(plan.src_bytes);
  const size_t w_bytes = static_cast<size_t>(w_span) * element_size(p.dtype);
  const bool packed_weights = plan.reorder_wei && !plan.via_f32 && w_bytes <= kMaxPackedWeightBytes;
  sizes[5] = packed_weights ? 0 : aligned(plan.wei_bytes);
  sizes[6] = aligned(plan.dst_bytes);
  sizes[7] = aligned(plan.scratchpad_bytes);
  size_t total = 0;
  for (size_t s : sizes) total += s;
  char* base = static_cast<char*>(ctx.scratch(std::max<size_t>(total, 64)));
  char* buf[8];
  for (int i = 0; i < 8; ++i) {
    buf[i] = base;
    base += sizes[i];
  }

  const void* in = p.in;
  const void* weight = p.weight;
  const void* bias = p.bias;
  void* out = p.out;
  if (plan.via_f32) {
    du::convert_flat(ctx, p.dtype, in, DType::Float32, buf[0], in_span);
    du::convert_flat(ctx, p.dtype, weight, DType::Float32, buf[1], w_span);
    if (bias != nullptr) du::convert_flat(ctx, p.dtype, bias, DType::Float32, buf[2], p.oc);
    in = buf[0];
    weight = buf[1];
    bias = bias != nullptr ? buf[2] : nullptr;
    out = buf[3];
  }

  auto reorder = [&](const dnnl::reorder& r, const memory& from, const memory& to) {
    const dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
    du::execute(r, args, op);
  };
  if (plan.reorder_src) {
    du::bind(plan.src_user, in);
    du::bind(plan.src, buf[4]);
    reorder(plan.src_reorder, plan.src_user, plan.src);
  } else {
    du::bind(plan.src, in);
  }
  if (packed_weights) {
    bind_packed_weights(plan, weight, w_bytes, op);
  } else if (plan.reorder_wei) {
    du::bind(plan.wei_user, weight);
    du::bind(plan.wei, buf[5]);
    reorder(plan.wei_reorder, plan.wei_user, plan.wei);
  } else {
    du::bind(plan.wei, weight);
  }
  du::bind(plan.dst, plan.reorder_dst ? static_cast<void*>(buf[6]) : out);
  du::bind(plan.scratchpad, buf[7]);
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, plan.src.get()},
                             {DNNL_ARG_WEIGHTS, plan.wei.get()},
                             {DNNL_ARG_DST, plan.dst.get()},
                             {DNNL_ARG_SCRATCHPAD, plan.scratchpad.get()},
                             {DNNL_ARG_BIAS, plan.bias.get()}};
  if (bias != nullptr) du::bind(plan.bias, bias);
  du::execute(plan.prim, {args, bias != nullptr ? 5u : 4u}, op);
  if (plan.reorder_dst) {
    du::bind(plan.dst_user, out);
    reorder(plan.dst_reorder, plan.dst, plan.dst_user);
  }
  if (plan.via_f32) du::convert_flat(ctx, DType::Float32, out, p.dtype, p.out, out_span);
}

/// conv_dnnl() on the calling thread.
bool conv_range(KernelContext& ctx, const ConvProblem& p, const char* op) {
  PlanKey key;
  key.add(
      {static_cast<int64_t>(p.dtype), p.transposed ? 1 : 0, p.groups, p.bias != nullptr ? 1 : 0});
  key.add({p.n, p.ic, p.oc, p.ih, p.iw, p.oh, p.ow, p.kh, p.kw});
  key.add({p.stride[0], p.stride[1], p.pad[0], p.pad[1], p.dilation[0], p.dilation[1], p.out_pad[0],
           p.out_pad[1]});
  for (int i = 0; i < 4; ++i) key.add({p.in_strides[i], p.w_strides[i], p.out_strides[i]});
  // One plan per weight tensor: layers of one geometry would otherwise
  // reorder their weights into a shared plan on every call.
  key.add(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p.weight)));

  thread_local PlanCache<ConvPlan> cache(128);
  ConvPlan& plan = cache.get(key, [&] { return make_plan(p); });
  if (!plan.usable) return false;
  run(ctx, p, plan, op);
  return true;
}

}  // namespace

bool conv_dnnl(KernelContext& ctx, const ConvProblem& p, const char* op) {
  if (p.dtype != DType::Float32 && p.dtype != DType::Float16 && p.dtype != DType::BFloat16) {
    return false;
  }
  const double work =
      static_cast<double>(p.n) * p.oc * p.oh * p.ow * (p.ic / p.groups) * p.kh * p.kw;
  if (ctx.num_threads <= 1 || p.n < 2 || work < du::kMinParallelWork) {
    return conv_range(ctx, p, op);
  }
  // Images in ranges over the threads, each range one oneDNN call.
  const size_t es = element_size(p.dtype);
  std::atomic<bool> declined{false};
  cpu::parallel_for(ctx, p.n, static_cast<int64_t>(work / p.n), [&](int64_t b, int64_t e) {
    ConvProblem q = p;
    q.n = e - b;
    q.in = static_cast<const char*>(p.in) + b * p.in_strides[0] * es;
    q.out = static_cast<char*>(p.out) + b * p.out_strides[0] * es;
    if (!conv_range(du::range_context(), q, op)) declined.store(true);
  });
  return !declined.load();  // declined: the caller's own kernel redoes all images
}

}  // namespace pterun::cpu
