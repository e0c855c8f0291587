// The quantized linear layer and mean on the CPU (ops/quant.h; the
// convolution is quant_conv.cpp): integer accumulation (quant_gemm.cpp for
// the products), then one requantization per output in float32 as
// ExecuTorch rounds (quant_requant.h: a multiply, an add, a multiply,
// round to nearest even, the zero point; this file is built without fused
// multiply-adds).

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "pterun/backend/cpu/engine/parallel.h"
#include "pterun/backend/cpu/engine/x86_intrinsics.h"
#include "pterun/backend/cpu/ops/ops.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/backend/cpu/ops/quant_panels.h"
#include "pterun/backend/cpu/ops/quant_quantize.h"
#include "pterun/backend/cpu/ops/quant_requant.h"
#include "pterun/backend/cpu/ops/quant_util.h"
#include "pterun/core/error.h"
#include "pterun/kernels/common/dtype_visit.h"
#include "pterun/ops/quant.h"
#include "pterun/ops/quant_checks.h"

namespace pterun::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kRowBlock = 64;
constexpr int64_t kColBlock = 256;

}  // namespace

// ---- linear -------------------------------------------------------------------

void quantized_linear(KernelContext& ctx, const ops::QLinearArgs& a) {
  // Tasks of up to kRowBlock rows x kColBlock output channels, fewer
  // channels where a few rows (a small batch) would leave a thread idle.
  const int64_t n = a.n;
  const int threads = std::max(1, ctx.num_threads);
  const int64_t row_blocks = (a.m + kRowBlock - 1) / kRowBlock;
  // Rows packed against weights read in place, or rows broadcast against
  // kept weight panels (quant_panels.h: qlinear_form).
  const QLinearForm form = qlinear_form(a.m, n, a.k);
  const bool packed = form == QLinearForm::PackedRows;
  const bool weight_panels = form == QLinearForm::KeptPanels;
  int64_t col_block = column_block(row_blocks, n, threads, kColBlock, a.m * n * a.k / 16);
  if (weight_panels) col_block = (col_block + 15) / 16 * 16;
  const int64_t col_blocks = (n + col_block - 1) / col_block;
  const int64_t cols = std::min(n, col_block);
  // A float32 input is quantized to int8 first, and an input the float32
  // out overlaps is copied first (ops/quant.h), into `rows`.
  const bool float_in = a.in.dtype() == DType::Float32;
  const bool float_out = a.out.dtype() == DType::Float32;
  const auto in_bytes = static_cast<size_t>(a.m * a.k);
  const auto* in_begin = static_cast<const uint8_t*>(a.in.data());
  const auto* out_begin = static_cast<const uint8_t*>(a.out.data());
  const bool copy_in = !float_in && float_out && in_begin < out_begin + a.out.nbytes() &&
                       out_begin < in_begin + in_bytes;
  const bool in_unsigned = a.in.dtype() == DType::UInt8;
  // From a few rows on (with the packed kernel) the activation rows are
  // packed once, before the tasks, and the weights read in place against
  // them. Scratch: the channel terms, the staged rows, the packed rows,
  // then per thread an accumulator block and a row of int8 outputs.
  const size_t terms_bytes = aligned(static_cast<size_t>(2 * n) * sizeof(float));
  const size_t rows_bytes = float_in || copy_in ? aligned(in_bytes) : 0;
  const size_t panels_bytes = packed ? aligned(qgemm_rows_bytes(a.m, a.k)) : 0;
  const size_t acc_bytes = aligned(static_cast<size_t>(kRowBlock * cols) * sizeof(int32_t)) +
                           (float_out ? aligned(static_cast<size_t>(cols)) : 0);
  auto* scratch = static_cast<char*>(
      ctx.scratch(terms_bytes + rows_bytes + panels_bytes + acc_bytes * threads));
  const Requant terms = requant_terms(a.rq, n, scratch);
  auto* rows_copy = reinterpret_cast<uint8_t*>(scratch + terms_bytes);
  auto* panels = reinterpret_cast<uint8_t*>(scratch + terms_bytes + rows_bytes);
  const auto* in = in_begin;
  if (float_in) {
    const float inv = 1.0f / a.rq.in_q.scale;
    const auto zp = static_cast<float>(a.rq.in_q.zero_point);
    const float* x = a.in.data_as<const float>();
    parallel_for(ctx, a.m, a.k, [&](int64_t begin, int64_t end) {
      quantize_floats(x + begin * a.k, reinterpret_cast<int8_t*>(rows_copy) + begin * a.k,
                      (end - begin) * a.k, inv, zp, -128, 127);
    });
    in = rows_copy;
  } else if (copy_in) {
    std::memcpy(rows_copy, in_begin, in_bytes);
    in = rows_copy;
  }
  if (packed) {
    parallel_for(ctx, (a.m + 15) / 16, 16 * a.k, [&](int64_t begin, int64_t end) {
      qgemm_pack(reinterpret_cast<const int8_t*>(in), a.k, a.m, a.k, !in_unsigned, begin, end,
                 panels);
    });
  }
  const int64_t panel_bytes = qgemm_panel_bytes(a.k);
  const uint8_t* w_panels = weight_panels
                                ? kept_weight_panels(a.weight.data_as<const int8_t>(),
                                                     a.weight.constant_id(), n, a.k, in_unsigned)
                                : nullptr;
  auto run = [&]<typename Out>(Out* out) {
    parallel_for(ctx, row_blocks * col_blocks, std::max<int64_t>(1, kRowBlock * cols * a.k / 16),
                 [&](int64_t begin, int64_t end) {
                   char* mine = scratch + terms_bytes + rows_bytes + panels_bytes +
                                acc_bytes * parallel_thread_index();
                   auto* acc = reinterpret_cast<int32_t*>(mine);
                   auto* q_row = reinterpret_cast<int8_t*>(
                       mine + aligned(static_cast<size_t>(kRowBlock * cols) * sizeof(int32_t)));
                   for (int64_t t = begin; t < end; ++t) {
                     const int64_t i0 = t / col_blocks * kRowBlock;
                     const int64_t j0 = t % col_blocks * col_block;
                     const int64_t rows = std::min(kRowBlock, a.m - i0);
                     const int64_t width = std::min(col_block, n - j0);
                     const QGemm g{in + i0 * a.k,
                                   a.k,
                                   in_unsigned,
                                   a.rq.in_q.zero_point,
                                   a.weight.data_as<const int8_t>() + j0 * a.k,
                                   a.k,
                                   a.weight_sums.data_as<const int32_t>() + j0,
                                   rows,
                                   width,
                                   a.k};
                     if (packed) {
                       qgemm_rows_on_panels(g, panels + i0 / 16 * panel_bytes, acc, width);
                     } else if (weight_panels) {
                       qgemm_packed(g, w_panels + j0 / 16 * panel_bytes, acc, width);
                     } else {
                       qgemm(g, acc, width);
                     }
                     for (int64_t r = 0; r < rows; ++r) {
                       Out* o = out + (i0 + r) * n + j0;
                       if constexpr (std::is_same_v<Out, float>) {
                         // int8 as the requantization rounds it, then as
                         // dequantize_per_tensor gives it back.
                         requantize_run(acc + r * width, width, terms, j0, q_row);
                         const auto zp = static_cast<int64_t>(a.rq.out_q.zero_point);
                         for (int64_t j = 0; j < width; ++j) {
                           o[j] = static_cast<float>(int64_t{q_row[j]} - zp) * a.rq.out_q.scale;
                         }
                       } else {
                         requantize_run(acc + r * width, width, terms, j0, o);
                       }
                     }
                   }
                 });
  };
  if (float_out) {
    run(a.out.data_as<float>());
  } else {
    kernels::visit_q8(a.out.dtype(), [&]<typename Out>() { run(a.out.data_as<Out>()); });
  }
}

// ---- mean ---------------------------------------------------------------------

void quantized_mean(KernelContext& ctx, const ops::QMeanArgs& a) {
  const float inv = 1.0f / a.out_q.scale;
  const auto zp = static_cast<float>(a.out_q.zero_point);
  const int64_t zero_total = a.reduce * a.in_q.zero_point;
  const auto count = static_cast<float>(a.reduce);
  // Runs of up to kChunk outputs along `inner` (channels of a channels-last
  // image) sum their reduced rows side by side, contiguous reads into int32
  // sums (exact while reduce * 255 fits); a single output sums its strided
  // elements alone.
  constexpr int64_t kChunk = 256;
  const bool runs = a.inner > 1 && a.reduce <= (int64_t{1} << 23);
  const int64_t chunks = runs ? (a.inner + kChunk - 1) / kChunk : a.inner;
  kernels::visit_q8(a.in.dtype(), [&]<typename In>() {
    kernels::visit_q8(a.out.dtype(), [&]<typename Out>() {
      const In* in = a.in.data_as<const In>();
      Out* out = a.out.data_as<Out>();
      auto finish = [&](int64_t sum) {
        const float y = static_cast<float>(sum - zero_total) * a.in_q.scale / count;
        return static_cast<Out>(requantize(y, inv, zp, a.out_min, a.out_max));
      };
      const int64_t per_task = runs ? a.reduce * std::min(a.inner, kChunk) : a.reduce;
      parallel_for(ctx, a.outer * chunks, per_task, [&](int64_t begin, int64_t end) {
        alignas(64) int32_t sums[kChunk];
        for (int64_t e = begin; e < end; ++e) {
          const int64_t o = e / chunks;
          if (!runs) {
            const int64_t i = e % chunks;
            const In* src = in + o * a.reduce * a.inner + i;
            int64_t sum = 0;
            for (int64_t r = 0; r < a.reduce; ++r) sum += src[r * a.inner];
            out[o * a.inner + i] = finish(sum);
            continue;
          }
          const int64_t i0 = e % chunks * kChunk, n = std::min(kChunk, a.inner - i0);
          const In* src = in + o * a.reduce * a.inner + i0;
          std::fill(sums, sums + n, 0);
          for (int64_t r = 0; r < a.reduce; ++r, src += a.inner) {
            for (int64_t i = 0; i < n; ++i) sums[i] += src[i];
          }
          for (int64_t i = 0; i < n; ++i) out[o * a.inner + i0 + i] = finish(sums[i]);
        }
      });
    });
  });
}

}  // namespace pterun::cpu
