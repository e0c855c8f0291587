// torch's decomposed scaled-dot-product attention found from a method's
// instructions alone (rewrite.h, find_attention_fusions), to run as one
// kernel (kernels/internal_ops.h, kAttentionKernel).
//
// The finder walks back from each bmm.out that multiplies a softmax by
// values: the softmax's input to the bmm.out of queries and keys (through
// a multiplication of the scores by a number and the addition of a mask),
// each operand of the two products to the tensor it was copied from
// (through layout copies and multiplications by a number), and forward
// from the result through its layout copies to the tensor the rest of the
// method reads. Layout is tracked as a permutation of dimensions: a tensor
// T reached from a base tensor X is X.permute(p), T's dimension k being
// X's dimension p[k].

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "pterun/executor/chain_view.h"
#include "pterun/executor/desc_util.h"
#include "pterun/executor/rewrite.h"

namespace pterun {
namespace {

using detail::ChainView;
using Perm = std::array<int, 4>;

constexpr Perm kIdentity = {0, 1, 2, 3};
constexpr int64_t kMaxHeadDim = 256;
constexpr Perm kSwapMiddle = {0, 2, 1, 3};  // [B, H, S, D] <-> [B, S, H, D]

/// T.permute(r) for T = X.permute(p): X.permute(p o r).
Perm then(const Perm& p, const Perm& r) {
  return {p[r[0]], p[r[1]], p[r[2]], p[r[3]]};
}

Perm inverse(const Perm& p) {
  Perm inv{};
  for (int k = 0; k < 4; ++k) inv[p[k]] = k;
  return inv;
}

/// A value that reads or writes a tensor's bytes as X.permute(p), X being
/// the tensor (default dim order, static): the view's sizes, and its dim
/// order over those bytes (outermost first: dimension k of the view steps
/// through X's dimension p[k]).
AttentionFusion::View view_of(int32_t value, const std::vector<int64_t>& sizes, const Perm& p) {
  AttentionFusion::View v;
  v.value = value;
  const Perm order = inverse(p);
  for (int k = 0; k < 4; ++k) {
    v.sizes.push_back(sizes[p[k]]);
    v.dim_order.push_back(static_cast<uint8_t>(order[k]));
  }
  v.whole = p == kIdentity;
  return v;
}

class Finder {
 public:
  Finder(const format::MethodDesc& d, const ChainView& v, const std::vector<bool>& keep,
         const std::vector<PatternFusion>& safe)
      : d_(d), v_(v), keep_(keep), instrs_(v.instrs()) {
    for (size_t k = 0; k < instrs_.size(); ++k) {
      if (instrs_[k].kind != format::InstructionKind::KernelCall || instrs_[k].args.empty()) {
        continue;
      }
      (running(k) ? writer_ : folded_)[instrs_[k].args.back()] = k;
    }
    for (const PatternFusion& f : safe) {
      if (f.chain == v.c) safe_[f.out] = &f;
    }
  }

  std::optional<AttentionFusion> at(size_t k) {
    if (!running(k) || !v_.is_kernel(k, "aten::bmm.out", 4)) return std::nullopt;
    steps_.clear();
    written_.clear();
    scale_ = 1;
    narrow_.reset();
    AttentionFusion f;
    f.chain = v_.c;
    const auto& pv = instrs_[k].args;  // (probabilities, values, out)
    steps_.push_back(k);
    // The probabilities: a softmax over the last dimension, plain or safe.
    int32_t probs = source(pv[0], k);
    if (probs < 0) return std::nullopt;
    probs = through_same_expand(probs);
    int32_t scores = -1;
    size_t reader = kNone;  // the instruction that reads `scores`
    if (auto s = safe_.find(probs); s != safe_.end()) {
      const PatternFusion& sf = *s->second;
      f.empty_rows_zero = true;
      steps_.push_back(sf.replacement.index);
      steps_.insert(steps_.end(), sf.idle.begin(), sf.idle.end());
      for (const auto& dropped : sf.dropped) written_.push_back(dropped.first);
      written_.push_back(probs);
      scores = sf.input;
      reader = sf.replacement.index;
      if (!last_dim(sf.replacement.args[1], scores)) return std::nullopt;
    } else {
      const size_t w = writer(probs);
      if (w == kNone || !v_.is_kernel(w, "aten::_softmax.out", 5)) return std::nullopt;
      const auto& a = instrs_[w].args;
      if (d_.values[a[2]].kind != ValueKind::Bool || d_.values[a[2]].bool_value ||
          !last_dim(a[1], a[0])) {
        return std::nullopt;
      }
      steps_.push_back(w);
      written_.push_back(probs);
      scores = a[0];
      reader = w;
    }
    // The scores: q.k^T, times numbers, plus an additive mask.
    // The kernel adds the mask to the scaled scores: a number applied
    // after the mask (met first, walking back) would scale the mask too.
    std::optional<int32_t> mask;
    size_t mask_at = kNone, qk = kNone;
    bool scaled_after = false;
    std::vector<int32_t> score_values = {scores, probs};
    for (int32_t x = scores; qk == kNone;) {
      const size_t w = writer(x);
      if (w == kNone) {
        const int32_t s = source(x, reader);
        if (s < 0 || s == x || writer(s) == kNone || !v_.is_kernel(writer(s), "aten::bmm.out", 4)) {
          return std::nullopt;
        }
        qk = writer(s);
        written_.push_back(s);
        score_values.push_back(x);
        score_values.push_back(s);
        break;
      }
      written_.push_back(x);
      steps_.push_back(w);
      reader = w;
      score_values.push_back(x);
      const auto& a = instrs_[w].args;
      if (v_.is_kernel(w, "aten::bmm.out", 4)) {
        qk = w;
      } else if (const int32_t in = number(w, x); in >= 0) {
        x = in;
        scaled_after = !mask;
      } else if (v_.is_kernel(w, "aten::add.out", 5) && !mask && !scaled_after &&
                 v_.number_is(a[2], 1)) {
        // The scores come from the product; the other addend is the mask.
        const bool first = from_product(a[0], w);
        if (!first && !from_product(a[1], w)) return std::nullopt;
        mask = first ? a[1] : a[0];
        mask_at = w;
        x = first ? a[0] : a[1];
      } else {
        return std::nullopt;
      }
    }
    if (std::find(steps_.begin(), steps_.end(), qk) == steps_.end()) steps_.push_back(qk);
    const auto& qa = instrs_[qk].args;
    const auto q = operand(qa[0], qk);
    const auto kt = operand(qa[1], qk);
    const auto values = operand(pv[1], k, false);  // a number here would scale the result
    if (!q || !kt || !values) return std::nullopt;
    const std::vector<int64_t>& qs = tensor(q->base)->sizes;
    const auto qv = then(q->perm, kSwapMiddle);
    const auto kv = then(kt->perm, Perm{0, 3, 1, 2});  // [B, H, D, Sk] -> [B, Sk, H, D]
    const auto vv = then(values->perm, kSwapMiddle);
    if (qv[3] != 3 || kv[3] != 3 || vv[3] != 3) return std::nullopt;  // head_dim innermost
    f.q = view_of(q->base, qs, qv);
    f.k = view_of(kt->base, tensor(kt->base)->sizes, kv);
    f.v = view_of(values->base, tensor(values->base)->sizes, vv);
    // What the kernel reads from planned memory, with the run's instruction
    // that read it: the bases, or the tensor a split cut them from.
    std::array<std::pair<int32_t, size_t>, 3> base_reads = {
        std::pair{q->base, q->reader}, {kt->base, kt->reader}, {values->base, values->reader}};
    if (const auto split = unpack_split(f, {q->base, kt->base, values->base}, {qv, kv, vv},
                                        {q->reader, kt->reader, values->reader})) {
      base_reads = {std::pair{split->first, split->second}, {-1, kNone}, {-1, kNone}};
    }
    // [B, S, H, D] each; keys and values alike; as many heads as the
    // queries, or a whole number of query heads per head (grouped keys and
    // values whose repeat the trace passed over).
    const auto& qz = f.q.sizes;
    const auto& kz = f.k.sizes;
    if (kz != f.v.sizes || qz[0] != kz[0] || kz[2] <= 0 || qz[2] % kz[2] != 0 || qz[3] != kz[3] ||
        kz[1] < qz[1]) {
      return std::nullopt;
    }
    const DType dtype = tensor(q->base)->dtype;
    // The kernels' dtypes and head sizes on every device (CUDA's takes
    // head_dim up to 256).
    if ((dtype != DType::Float32 && dtype != DType::Float16 && dtype != DType::BFloat16) ||
        qz[3] > kMaxHeadDim || tensor(kt->base)->dtype != dtype ||
        tensor(values->base)->dtype != dtype ||
        tensor(pv[2])->dtype != (narrow_ ? DType::Float32 : dtype) ||
        (narrow_ && *narrow_ != dtype)) {
      return std::nullopt;
    }
    // Every tensor between the two products holds the rows of scores
    // [..., S, Sk] (a view that reshapes them changes what the softmax
    // normalises).
    const int64_t n = qz[0] * qz[2];
    for (int32_t t : score_values) {
      const format::TensorDesc* st = tensor(t);
      if (st == nullptr || st->sizes.size() < 2 ||
          st->numel != static_cast<uint64_t>(n * qz[1] * kz[1]) ||
          st->sizes[st->sizes.size() - 2] != qz[1] || st->sizes.back() != kz[1]) {
        return std::nullopt;
      }
    }
    for (int32_t t : {pv[0], probs}) {
      const format::TensorDesc* pt = tensor(t);
      if (pt == nullptr || pt->sizes.size() < 2 || pt->sizes[pt->sizes.size() - 2] != qz[1] ||
          pt->sizes.back() != kz[1]) {
        return std::nullopt;
      }
    }
    f.scale = scale_;
    // The result, [B * H, S, D], through its layout copies.
    const auto out = result(pv[2], k, qz);
    if (!out) return std::nullopt;
    f.out = *out;
    if (mask && !mask_view(*mask, qz[1], kz[1], dtype, f)) return std::nullopt;
    f.at = *std::max_element(steps_.begin(), steps_.end());
    for (size_t s : steps_) {
      if (s != f.at) f.idle.push_back(s);
    }
    std::sort(f.idle.begin(), f.idle.end());
    f.idle.erase(std::unique(f.idle.begin(), f.idle.end()), f.idle.end());
    f.dropped = written_;
    // What the kernel reads from planned memory, with the instruction of the
    // run that read it (a folded value has memory of its own).
    for (auto [t, r] :
         {base_reads[0], base_reads[1], base_reads[2], std::pair{mask.value_or(-1), mask_at}}) {
      if (t >= 0 && folded_.find(t) == folded_.end()) f.reads.emplace_back(t, r);
    }
    if (!consistent(f)) return std::nullopt;
    return f;
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  struct Traced {
    int32_t base;
    Perm perm;      // the operand is base.permute(perm)
    size_t reader;  // the run's instruction that read base
  };

  bool running(size_t k) const { return v_.running(k); }
  const format::TensorDesc* tensor(int32_t t) const { return desc::tensor_of(d_, t); }

  size_t writer(int32_t t) const {
    const auto it = writer_.find(t);
    return it == writer_.end() ? kNone : it->second;
  }

  // The last running instruction before `before` that may write over t's
  // bytes, or kNone.
  size_t last_write(const format::TensorDesc& t, size_t before) const {
    for (size_t k = std::min(before, instrs_.size()); k-- > 0;) {
      if (running(k) && may_write(k, t)) return k;
    }
    return kNone;
  }

  // Whether `a`, read by instruction k, is a view (no running instruction
  // writes it) of the bytes of a value folded at load: it reads that
  // value's own memory, not the planned bytes.
  bool folded_view(int32_t a, size_t k) const {
    const format::TensorDesc* at = tensor(a);
    if (at == nullptr || writer_.count(a) > 0) return false;
    for (size_t j = std::min(k, instrs_.size()); j-- > 0;) {
      if (!may_write(j, *at)) continue;
      if (running(j) || instrs_[j].args.empty()) return false;
      const format::TensorDesc* wt = tensor(instrs_[j].args.back());
      return wt != nullptr && desc::same_bytes(*wt, *at);
    }
    return false;
  }

  // The running instruction whose result is a list holding t, or kNone.
  size_t list_writer(int32_t t) const {
    for (const auto& [value, w] : writer_) {
      const format::ValueDesc& x = d_.values[value];
      if (x.kind == ValueKind::TensorList && std::count(x.items.begin(), x.items.end(), t) > 0) {
        return w;
      }
    }
    return kNone;
  }

  bool plain(const format::TensorDesc* t) const {
    return t != nullptr && desc::default_order(*t) && t->dynamism == ShapeDynamism::Static;
  }

  // A kept value other than an input or an output: state, or a value a
  // kernel re-points. A view of it cannot follow it (the loader makes the
  // views of inputs and outputs follow them when a call re-points them).
  bool fixed(int32_t t) const {
    return keep_[t] && std::find(d_.inputs.begin(), d_.inputs.end(), t) == d_.inputs.end() &&
           std::find(d_.outputs.begin(), d_.outputs.end(), t) == d_.outputs.end();
  }

  // Not kept, static, default order: a value the fusion may drop.
  bool internal(int32_t t) const { return !keep_[t] && plain(tensor(t)); }

  // The value an instruction wrote whose bytes `t` reads, as instruction
  // `before` sees them: t itself when an instruction writes it, else the
  // last one before `before` that wrote exactly t's bytes (a view the
  // exporter made by memory planning alone). -1 when there is none.
  int32_t source(int32_t t, size_t before) const {
    if (writer(t) != kNone) return t;
    const format::TensorDesc* tt = tensor(t);
    if (tt == nullptr || keep_[t]) return -1;
    for (size_t w = std::min(before, instrs_.size()); w-- > 0;) {
      if (!running(w) || instrs_[w].kind != format::InstructionKind::KernelCall ||
          instrs_[w].args.empty()) {
        continue;
      }
      const int32_t r = instrs_[w].args.back();
      const format::TensorDesc* rt = tensor(r);
      if (rt == nullptr) {
        if (may_write(w, *tt)) return -1;  // an item of a list, say
        continue;
      }
      if (!desc::planned(*rt) || !desc::overlaps(*rt, *tt)) continue;
      return desc::same_bytes(*rt, *tt) ? r : -1;
    }
    return -1;
  }

  // q, k and v (`bases`, [B, S, H, D] each, no instruction writing them,
  // read first by the run's `readers`) the bytes of the three items of one
  // running split_with_sizes_copy.out of X [..., C] along its last dim, the
  // last instruction to write them before they are read, each item read by
  // the run alone: the views (with `perms`, as view_of takes them) become
  // windows of X, the split joins the run and its items are dropped.
  // Returns X and the split's index, or nothing (the views stay as they
  // were).
  std::optional<std::pair<int32_t, size_t>> unpack_split(AttentionFusion& f,
                                                         const std::array<int32_t, 3>& bases,
                                                         const std::array<Perm, 3>& perms,
                                                         const std::array<size_t, 3>& readers) {
    std::array<const format::TensorDesc*, 3> bt{};
    size_t w = kNone;
    for (int i = 0; i < 3; ++i) {
      bt[i] = tensor(bases[i]);
      if (bt[i] == nullptr || writer(bases[i]) != kNone || !internal(bases[i]) ||
          !desc::planned(*bt[i]) || readers[i] == kNone) {
        return std::nullopt;
      }
      const size_t last = last_write(*bt[i], readers[i]);
      if (last == kNone || (w != kNone && last != w)) return std::nullopt;
      w = last;
    }
    if (!v_.is_kernel(w, "aten::split_with_sizes_copy.out", 5)) return std::nullopt;
    const auto& a = instrs_[w].args;
    // The out list and the returned one (two values naming the same items).
    const format::ValueDesc& list = d_.values[a[3]];
    const int32_t x = a[0];
    const format::TensorDesc* xt = tensor(x);
    if (d_.values[a[4]].items != list.items || list.kind != ValueKind::TensorList ||
        list.items.size() != 3 || !plain(xt) || xt->sizes.empty() || keep_[x] ||
        !last_dim(a[2], x)) {
      return std::nullopt;
    }
    const int64_t cols = xt->sizes.back();
    if (cols <= 0) return std::nullopt;
    const int64_t rows = static_cast<int64_t>(xt->numel) / cols;
    std::array<int, 3> item_of = {-1, -1, -1};
    std::array<int64_t, 3> offsets{};
    int64_t offset = 0;
    bool ok = true;
    for (size_t j = 0; j < 3 && ok; ++j) {
      const auto item = static_cast<int32_t>(list.items[j]);
      const format::TensorDesc* it = item >= 0 ? tensor(item) : nullptr;
      ok = it != nullptr && internal(item) && v_.uses[item] == 1 &&
           it->sizes.size() == xt->sizes.size() && it->dtype == xt->dtype &&
           std::equal(it->sizes.begin(), it->sizes.end() - 1, xt->sizes.begin());
      for (int i = 0; i < 3 && ok; ++i) {
        if (item_of[i] < 0 && desc::same_bytes(*it, *bt[i])) {
          item_of[i] = static_cast<int>(j);
          offsets[i] = offset;
          break;
        }
      }
      if (ok) offset += it->sizes.back();
    }
    if (!ok || offset != cols || std::count(item_of.begin(), item_of.end(), -1) > 0) {
      return std::nullopt;
    }
    std::array<AttentionFusion::View, 3> views = {f.q, f.k, f.v};
    for (int i = 0; i < 3; ++i) {
      // base[b, s, h, e] is the item's element (b * S + s, h * D + e).
      const std::vector<int64_t>& z = bt[i]->sizes;
      const auto item = static_cast<int32_t>(list.items[item_of[i]]);
      if (z.size() != 4 || z[0] * z[1] != rows || z[2] * z[3] != tensor(item)->sizes.back()) {
        return std::nullopt;
      }
      const std::array<int64_t, 4> strides = {z[1] * cols, cols, z[3], 1};
      AttentionFusion::View& view = views[i];
      view.value = x;
      view.whole = false;
      view.offset = offsets[i];
      view.strides.clear();
      view.dim_order = {0, 1, 2, 3};
      for (int k = 0; k < 4; ++k) view.strides.push_back(strides[perms[i][k]]);
      // Every element inside X.
      int64_t last = view.offset;
      for (int k = 0; k < 4; ++k) last += (view.sizes[k] - 1) * view.strides[k];
      if (last >= static_cast<int64_t>(xt->numel)) return std::nullopt;
    }
    f.q = views[0];
    f.k = views[1];
    f.v = views[2];
    steps_.push_back(w);
    for (int64_t item : list.items) written_.push_back(static_cast<int32_t>(item));
    return std::pair{x, w};
  }

  // expand_copy.out of a tensor to its own shape (a copy) is passed over.
  int32_t through_same_expand(int32_t t) {
    for (size_t w = writer(t); w != kNone && v_.is_kernel(w, "aten::expand_copy.out", 5);
         w = writer(t)) {
      const auto& a = instrs_[w].args;
      const format::TensorDesc* in = tensor(a[0]);
      if (in == nullptr || in->sizes != tensor(t)->sizes || !internal(t)) break;
      steps_.push_back(w);
      written_.push_back(t);
      t = a[0];
    }
    return t;
  }

  // permute_copy.out's dims, a permutation of 4 dimensions (negative ones
  // counted from the end).
  std::optional<Perm> permutation(int32_t v) const {
    const format::ValueDesc& dims = d_.values[v];
    if (dims.kind != ValueKind::IntList || dims.items.size() != 4) return std::nullopt;
    Perm p{};
    std::array<bool, 4> seen{};
    for (int k = 0; k < 4; ++k) {
      const auto& item = d_.values[dims.items[k]];
      if (item.kind != ValueKind::Int) return std::nullopt;
      const int64_t dim = item.int_value < 0 ? item.int_value + 4 : item.int_value;
      if (dim < 0 || dim >= 4 || seen[dim]) return std::nullopt;
      seen[dim] = true;
      p[k] = static_cast<int>(dim);
    }
    return p;
  }

  // `dim` names the last dimension of x.
  bool last_dim(int32_t dim, int32_t x) const {
    const format::TensorDesc* t = tensor(x);
    if (t == nullptr || d_.values[dim].kind != ValueKind::Int) return false;
    const auto rank = static_cast<int64_t>(t->sizes.size());
    const int64_t k = d_.values[dim].int_value;
    return k == -1 || k == rank - 1;
  }

  // x = t times or divided by a number (mul.Scalar_out, div.Scalar_out,
  // or mul.out / div.out by a one-element float32 constant): t, its
  // factor joining the scale; -1 otherwise.
  int32_t number(size_t w, int32_t x) {
    const bool scalar_mul = v_.is_kernel(w, "aten::mul.Scalar_out", 4);
    const bool tensor_mul = v_.is_kernel(w, "aten::mul.out", 4);
    const bool divide =
        v_.is_kernel(w, "aten::div.Scalar_out", 4) || v_.is_kernel(w, "aten::div.out", 4);
    if (!scalar_mul && !tensor_mul && !divide) return -1;
    const auto& a = instrs_[w].args;
    const format::TensorDesc* xt = tensor(x);
    double factor = 0;
    int32_t t = a[0];
    auto constant = [&](int32_t c) {
      const format::TensorDesc* ct = tensor(c);
      if (ct == nullptr || !ct->is_constant() || ct->dtype != DType::Float32 || ct->numel != 1 ||
          ct->data.size() != sizeof(float)) {
        return false;
      }
      float f = 0;
      std::memcpy(&f, ct->data.data(), sizeof f);
      factor = f;
      return true;
    };
    const format::ValueDesc& c = d_.values[a[1]];
    if (c.kind == ValueKind::Double) {
      factor = c.double_value;
    } else if (c.kind == ValueKind::Int) {
      factor = static_cast<double>(c.int_value);
    } else if (!constant(a[1])) {
      if (!tensor_mul || !constant(a[0])) return -1;
      t = a[1];  // the number first
    }
    const format::TensorDesc* in = tensor(t);
    if (!std::isfinite(factor) || factor == 0 || in == nullptr || xt == nullptr ||
        in->sizes != xt->sizes || in->dtype != xt->dtype) {
      return -1;
    }
    scale_ *= divide ? 1 / factor : factor;
    return t;
  }

  // x is the product of queries and keys, seen through a view.
  bool from_product(int32_t x, size_t reader) const {
    const int32_t s = source(x, reader);
    return s >= 0 && writer(s) != kNone && v_.is_kernel(writer(s), "aten::bmm.out", 4);
  }

  // One operand of a product, [N, rows, cols], from a [B, H, rows, cols]
  // tensor through layout copies and numbers.
  std::optional<Traced> operand(int32_t x, size_t reader, bool numbers = true) {
    const int32_t s = source(x, reader);
    const format::TensorDesc* xt = tensor(x);
    if (s < 0 || xt == nullptr || xt->sizes.size() != 3 || !plain(xt)) return std::nullopt;
    const format::TensorDesc* st = tensor(s);
    if (st->sizes.size() != 4 || !plain(st) || st->sizes[0] * st->sizes[1] != xt->sizes[0] ||
        st->sizes[2] != xt->sizes[1] || st->sizes[3] != xt->sizes[2]) {
      return std::nullopt;
    }
    if (s != x) {
      if (!internal(x)) return std::nullopt;
      written_.push_back(x);
    }
    Perm perm = kIdentity;
    int32_t t = s;
    size_t read_at = reader;
    for (;;) {
      const size_t w = writer(t);
      if (w == kNone) {
        // Keys or values repeated per group of query heads: read the
        // groups' own heads, where the repeat found them (tracing further
        // back could reach bytes the plan hands to another value before
        // the attention runs).
        if (const auto repeat = repeated_heads(t, read_at)) {
          t = repeat->first;
          read_at = repeat->second;
        }
        break;
      }
      const auto& a = instrs_[w].args;
      const format::TensorDesc* in = tensor(a[0]);
      if (!internal(t) || v_.uses[t] > 2) break;
      int32_t next = a[0];
      if (v_.is_kernel(w, "aten::permute_copy.out", 4)) {
        const std::optional<Perm> p = permutation(a[1]);
        if (in == nullptr || in->sizes.size() != 4 || !p) break;
        perm = then(*p, perm);
      } else if (v_.is_kernel(w, "aten::expand_copy.out", 5) ||
                 v_.is_kernel(w, "dim_order_ops::_clone_dim_order.out", 5) ||
                 v_.is_kernel(w, "aten::clone.out", 4)) {
        if (in == nullptr || in->sizes != tensor(t)->sizes) break;  // a copy
      } else if (v_.cast_step(w)) {
        // float16 or bfloat16 widened to float32, exactly: the kernel reads
        // the narrow values (one dtype for q, k and v).
        const format::TensorDesc* tt = tensor(t);
        if (in == nullptr || !plain(in) || in->sizes != tt->sizes || tt->dtype != DType::Float32 ||
            (in->dtype != DType::Float16 && in->dtype != DType::BFloat16) ||
            (narrow_ && *narrow_ != in->dtype)) {
          break;
        }
        narrow_ = in->dtype;
      } else if (!numbers || (next = number(w, t)) < 0) {
        break;
      }
      steps_.push_back(w);
      written_.push_back(t);
      t = next;
      read_at = w;
    }
    const format::TensorDesc* base = tensor(t);
    if (base == nullptr || base->sizes.size() != 4 || !plain(base)) return std::nullopt;
    return Traced{t, perm, read_at};
  }

  // torch's repeat_kv of grouped-query attention: t [B, H, S, D] (no
  // instruction writing it, read first by the run's `reader`) holds the
  // bytes of clone(expand(unsqueeze(src, 2), [B, G, R, S, D])) (clone.out
  // or _clone_dim_order.out, the last instruction to write them before
  // the reader), src [B, G, S, D] and H = G * R, each step's result read by
  // the next alone: head h of t is head h / R of src, as the kernel reads
  // grouped keys and values. The three steps join the run; returns src
  // and the unsqueeze's index.
  std::optional<std::pair<int32_t, size_t>> repeated_heads(int32_t t, size_t reader) {
    const format::TensorDesc* tt = tensor(t);
    if (tt == nullptr || tt->sizes.size() != 4 || !internal(t) || !desc::planned(*tt) ||
        reader == kNone) {
      return std::nullopt;
    }
    const size_t clone = last_write(*tt, reader);
    if (clone == kNone || !(v_.is_kernel(clone, "dim_order_ops::_clone_dim_order.out", 5) ||
                            v_.is_kernel(clone, "aten::clone.out", 4))) {
      return std::nullopt;
    }
    const auto& ca = instrs_[clone].args;
    const int32_t c = ca.back(), e = ca[0];
    const format::TensorDesc* ct = tensor(c);
    const format::TensorDesc* et = tensor(e);
    const size_t expand = writer(e);
    if (ct == nullptr || et == nullptr || !internal(c) || !internal(e) || v_.uses[c] != 1 ||
        v_.uses[e] != 2 || !desc::same_bytes(*ct, *tt) || ct->sizes.size() != 5 ||
        et->sizes != ct->sizes || expand == kNone ||
        !v_.is_kernel(expand, "aten::expand_copy.out", 5)) {
      return std::nullopt;
    }
    const int32_t u = instrs_[expand].args[0];
    const format::TensorDesc* ut = tensor(u);
    const size_t unsqueeze = writer(u);
    if (ut == nullptr || !internal(u) || v_.uses[u] != 2 || unsqueeze == kNone ||
        !v_.is_kernel(unsqueeze, "aten::unsqueeze_copy.out", 4)) {
      return std::nullopt;
    }
    const auto& ua = instrs_[unsqueeze].args;
    const format::ValueDesc& dim = d_.values[ua[1]];
    const int32_t src = ua[0];
    const format::TensorDesc* st = tensor(src);
    if (dim.kind != ValueKind::Int || (dim.int_value != 2 && dim.int_value != -3) || !plain(st) ||
        st->sizes.size() != 4 || st->dtype != tt->dtype) {
      return std::nullopt;
    }
    // src [B, G, S, D] -> u [B, G, 1, S, D] -> e, c [B, G, R, S, D] = t [B, G * R, S, D].
    const std::vector<int64_t>& z = st->sizes;
    const std::vector<int64_t> grouped = {z[0], z[1], 1, z[2], z[3]};
    const std::vector<int64_t>& r = ct->sizes;
    if (ut->sizes != grouped || r[0] != z[0] || r[1] != z[1] || r[3] != z[2] || r[4] != z[3] ||
        tt->sizes != std::vector<int64_t>{z[0], z[1] * r[2], z[2], z[3]}) {
      return std::nullopt;
    }
    for (size_t k : {clone, expand, unsqueeze}) steps_.push_back(k);
    for (int32_t x : {c, e, u}) written_.push_back(x);
    return std::pair{src, unsqueeze};
  }

  // The product's result [N, S, D] followed through its layout copies to
  // the tensor the method reads, as a view [B, S, H, D] of that tensor's
  // bytes (q: the queries' [B, S, H, D]).
  std::optional<AttentionFusion::View> result(int32_t o, size_t w, const std::vector<int64_t>& q) {
    const format::TensorDesc* ot = tensor(o);
    if (!plain(ot) || ot->sizes.size() != 3 || ot->sizes[0] != q[0] * q[2] ||
        ot->sizes[1] != q[1] || ot->sizes[2] != q[3]) {
      return std::nullopt;
    }
    // The result as [B, H, S, D], then T = that.permute(perm) for each copy.
    const std::vector<int64_t> bhsd = {q[0], q[2], q[1], q[3]};
    int32_t t = o;
    std::vector<int64_t> sizes = bhsd;
    Perm perm = kIdentity;
    bool narrowed = false;
    for (;;) {
      std::vector<size_t> readers;
      if (!readers_of(t, w, readers) || readers.size() != 1) break;
      const size_t r = readers.front();
      const auto& a = instrs_[r].args;
      const format::TensorDesc* in = tensor(a[0]);
      const int32_t next = a.back();
      const format::TensorDesc* nt = tensor(next);
      if (in == nullptr || nt == nullptr || !plain(in) || !plain(nt) || in->sizes.size() != 4 ||
          nt->sizes.size() != 4 || in->sizes != (t == o ? bhsd : sizes) || !internal(t) ||
          (a[0] != t && !internal(a[0]))) {
        break;
      }
      Perm p = kIdentity;
      if (v_.is_kernel(r, "aten::permute_copy.out", 4)) {
        const std::optional<Perm> dims = permutation(a[1]);
        if (!dims) break;
        p = *dims;
      } else if (v_.cast_step(r)) {
        // The float32 result rounded back to the operands' dtype (once).
        if (!narrow_ || narrowed || in->dtype != DType::Float32 || nt->dtype != *narrow_ ||
            nt->sizes != in->sizes) {
          break;
        }
        narrowed = true;
      } else if (!(v_.is_kernel(r, "dim_order_ops::_clone_dim_order.out", 5) ||
                   v_.is_kernel(r, "aten::clone.out", 4))) {
        break;
      }
      perm = then(perm, p);
      for (int k = 0; k < 4; ++k) {
        if (nt->sizes[k] != bhsd[perm[k]]) return std::nullopt;
      }
      written_.push_back(t);  // o and each copy but the last: dropped
      if (a[0] != t) written_.push_back(a[0]);
      steps_.push_back(r);
      t = next;
      sizes = nt->sizes;
      w = r;
    }
    // out[b, s, h, d] = result[b, h, s, d]; result = T.permute(inverse(perm)).
    const Perm p = then(inverse(perm), kSwapMiddle);
    if (p[3] != 3 || narrowed != narrow_.has_value()) return std::nullopt;
    AttentionFusion::View v = view_of(t, t == o ? bhsd : sizes, p);
    v.whole = v.whole && t != o;  // o is [B * H, S, D]
    if (fixed(t) && !v.whole) return std::nullopt;
    return v;
  }

  // Whether running instruction k may write over bytes of t: its result
  // (or an item of it) overlaps them, or it names a tensor that does and
  // writes what it names (desc::writes_operands).
  bool may_write(size_t k, const format::TensorDesc& t) const {
    const auto& instr = instrs_[k];
    if (instr.kind != format::InstructionKind::KernelCall) return true;
    if (instr.args.empty()) return false;
    auto over = [&](int64_t v) {
      if (v < 0) return false;
      const format::ValueDesc& x = d_.values[v];
      if (x.kind == ValueKind::TensorList || x.kind == ValueKind::OptionalTensorList) {
        return std::any_of(x.items.begin(), x.items.end(), [&](int64_t i) {
          const format::TensorDesc* it = i >= 0 ? tensor(static_cast<int32_t>(i)) : nullptr;
          return it != nullptr && desc::planned(*it) && desc::overlaps(*it, t);
        });
      }
      const format::TensorDesc* vt = tensor(static_cast<int32_t>(v));
      return vt != nullptr && desc::planned(*vt) && desc::overlaps(*vt, t);
    };
    if (over(instr.args.back())) return true;
    return desc::writes_operands(d_, instr) &&
           std::any_of(instr.args.begin(), instr.args.end(), over);
  }

  // The running instructions after `w` that read t's bytes before an
  // instruction writes over them. False when a list argument names them
  // (not followed).
  bool readers_of(int32_t t, size_t w, std::vector<size_t>& out) const {
    const format::TensorDesc* tt = tensor(t);
    if (tt == nullptr || !desc::planned(*tt)) return false;
    // A value whose writer no longer runs (folded at load into memory of
    // its own, or dropped by an earlier fusion) reads nothing planned.
    auto touches = [&](int32_t a, size_t k) {
      const format::TensorDesc* at = tensor(a);
      return at != nullptr && desc::planned(*at) && desc::overlaps(*at, *tt) &&
             folded_.find(a) == folded_.end() && !folded_view(a, k);
    };
    for (size_t k = w + 1; k < instrs_.size(); ++k) {
      const auto& instr = instrs_[k];
      if (!running(k)) continue;
      if (instr.kind != format::InstructionKind::KernelCall) return false;
      // The out arguments (the return entry, or its items) are written.
      const int32_t ret = instr.args.empty() ? -1 : instr.args.back();
      auto written = [&](int32_t a) {
        if (a == ret) return true;
        const auto& rv = d_.values[ret];
        if (rv.kind != ValueKind::TensorList) return false;
        auto in_ret = [&](int64_t x) {
          return std::find(rv.items.begin(), rv.items.end(), x) != rv.items.end();
        };
        const auto& av = d_.values[a];
        return av.kind == ValueKind::TensorList
                   ? std::all_of(av.items.begin(), av.items.end(), in_ret)
                   : in_ret(a);
      };
      for (size_t i = 0; i + 1 < instr.args.size(); ++i) {
        const int32_t a = instr.args[i];
        if (written(a)) continue;
        const auto& value = d_.values[a];
        if (value.kind == ValueKind::TensorList || value.kind == ValueKind::OptionalTensorList) {
          for (int64_t item : value.items) {
            if (item >= 0 && touches(static_cast<int32_t>(item), k)) return false;
          }
        } else if (touches(a, k) && (out.empty() || out.back() != k)) {
          out.push_back(k);
        }
      }
      if (!instr.args.empty()) {
        const int32_t r = instr.args.back();
        const auto& rv = d_.values[r];
        if (touches(r, k)) return true;
        if (rv.kind == ValueKind::TensorList) {
          for (int64_t item : rv.items) {
            if (item >= 0 && touches(static_cast<int32_t>(item), k)) return true;
          }
        }
      }
    }
    return true;
  }

  // An additive mask [..., S, Sk] with ones before (broadcast over batch
  // and heads), read as [S, Sk].
  bool mask_view(int32_t m, int64_t s, int64_t sk, DType dtype, AttentionFusion& f) const {
    const format::TensorDesc* t = tensor(m);
    if (t == nullptr || t->sizes.size() < 2 || !desc::default_order(*t) ||
        t->dynamism != ShapeDynamism::Static || (t->dtype != dtype && t->dtype != DType::Float32)) {
      return false;
    }
    const size_t rank = t->sizes.size();
    for (size_t k = 0; k + 2 < rank; ++k) {
      if (t->sizes[k] != 1) return false;
    }
    if (t->sizes[rank - 2] != s || t->sizes[rank - 1] != sk) return false;
    AttentionFusion::View v;
    v.value = m;
    v.sizes = {s, sk};
    v.dim_order = {0, 1};
    v.whole = rank == 2;
    if (fixed(m) && !v.whole) return false;
    f.mask = v;
    return true;
  }

  // Every value the run drops is read by the run alone (its views too),
  // and none is kept; each view a kept value would need is whole.
  bool consistent(const AttentionFusion& f) const {
    auto in_run = [&](size_t k) {
      return k == f.at || std::binary_search(f.idle.begin(), f.idle.end(), k);
    };
    for (int32_t t : f.dropped) {
      if (keep_[t]) return false;
      size_t w = writer(t);
      if (w == kNone) w = list_writer(t);
      if (w == kNone) continue;  // a view: its writer's value is checked
      std::vector<size_t> readers;
      if (!readers_of(t, w, readers)) return false;
      for (size_t r : readers) {
        if (!in_run(r)) return false;
      }
    }
    for (const AttentionFusion::View* v : {&f.q, &f.k, &f.v}) {
      if (fixed(v->value) && !v->whole) return false;
    }
    // What the kernel reads is still there when it runs, later than the
    // run's instruction that read it: nothing else writes over it between.
    for (auto [t, read_at] : f.reads) {
      const format::TensorDesc* tt = tensor(t);
      if (tt == nullptr || !desc::planned(*tt)) continue;
      for (size_t k = read_at + 1; k < f.at; ++k) {
        if (running(k) && !in_run(k) && may_write(k, *tt)) return false;
      }
    }
    return true;
  }

  const format::MethodDesc& d_;
  const ChainView& v_;
  const std::vector<bool>& keep_;
  const std::vector<format::InstructionDesc>& instrs_;
  std::map<int32_t, size_t> writer_;  // running instructions' results
  std::map<int32_t, size_t> folded_;  // results of instructions that no longer run
  std::map<int32_t, const PatternFusion*> safe_;
  std::vector<size_t> steps_;
  std::vector<int32_t> written_;
  double scale_ = 1;
  // The dtype the operands were widened from to float32 (torch's math
  // attention of float16 and bfloat16 tensors), if they were.
  std::optional<DType> narrow_;
};

}  // namespace

std::vector<AttentionFusion> find_attention_fusions(const format::MethodDesc& d,
                                                    const std::vector<bool>& keep,
                                                    const std::vector<std::vector<bool>>& idle) {
  std::vector<AttentionFusion> found;
  const std::vector<PatternFusion> safe = find_safe_softmax_fusions(d, keep, idle);
  detail::for_each_chain(d, keep, idle, [&](const ChainView& v) {
    Finder finder(d, v, keep, safe);
    std::vector<bool> taken(v.instrs().size(), false);
    for (size_t k = 0; k < v.instrs().size(); ++k) {
      auto f = finder.at(k);
      if (!f || taken[f->at] ||
          std::any_of(f->idle.begin(), f->idle.end(), [&](size_t i) { return taken[i]; })) {
        continue;
      }
      taken[f->at] = true;
      for (size_t i : f->idle) taken[i] = true;
      found.push_back(std::move(*f));
    }
  });
  return found;
}

}  // namespace pterun
