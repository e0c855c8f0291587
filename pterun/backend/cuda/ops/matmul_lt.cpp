// lt_gemm_bias (matmul_lt.h). The descriptors live on the stack (the
// opaque initialisers), so a product allocates nothing; cuBLASLt's
// heuristic, which costs tens of microseconds, runs once per problem and
// its answer is kept.

#include "pterun/backend/cuda/ops/matmul_lt.h"

#include <cublasLt.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "pterun/backend/cuda/cuda_context.h"
#include "pterun/backend/cuda/plan_key.h"

namespace pterun::cuda::nn {
namespace {

/// What fixes the algorithm: the problem and the operands' alignment.
struct Key {
  int device;
  int type;
  int compute;
  int op_a, op_b;
  int epilogue;
  int64_t rows, cols, k, lda, ldb, ldd;
  uint32_t align_a, align_b, align_c, align_d, align_bias;
  uint32_t has_c;  // a C operand (else C is D)
};

struct Choice {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
};

/// Heuristic answers asked for per problem.
constexpr int kCandidates = 8;

/// Outputs up to this many elements take an algorithm without a split of
/// k when the heuristic offers one: a split adds a reduction kernel, and a
/// small product is a kernel's latency, not its arithmetic (gpt at batch
/// 1, H200: 2 of its 9 products came with one). PTERUN_LT_SPLIT_K=1 keeps
/// the heuristic's first answer everywhere.
constexpr int64_t kNoSplitElements = 64 * 1024;

bool allow_split_k() {
  static const bool allow = [] {
    const char* v = std::getenv("PTERUN_LT_SPLIT_K");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return allow;
}

/// Index of the answer to use among the heuristic's `found`, or -1.
int preferred(const cublasLtMatmulHeuristicResult_t* results, int found, int64_t elements) {
  int first = -1;
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    if (first < 0) first = i;
    if (elements > kNoSplitElements || allow_split_k()) return first;
    uint32_t splits = 1;
    size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&results[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                             &splits, sizeof splits,
                                             &written) == CUBLAS_STATUS_SUCCESS &&
        splits <= 1) {
      return i;
    }
  }
  return first;
}

void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* value,
         size_t size) {
  PTERUN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, value, size));
}

/// The layout of an operand of rows x cols after `op`.
void layout(cublasLtMatrixLayoutOpaque_t& storage, cudaDataType_t type, cublasOperation_t op,
            int64_t rows, int64_t cols, int64_t ld) {
  const bool t = op != CUBLAS_OP_N;
  PTERUN_CUBLAS_CHECK(
      cublasLtMatrixLayoutInit(&storage, type, t ? cols : rows, t ? rows : cols, ld));
}

}  // namespace

bool lt_gemm_bias(kernels::KernelContext& ctx, cudaDataType_t type, cublasComputeType_t compute,
                  int64_t rows, int64_t cols, int64_t k, const LtOperand& a, const LtOperand& b,
                  void* d, int64_t ldd, const void* bias, float alpha, bool relu,
                  const void* c_in) {
  const CublasLt lt = cublas_lt(ctx);

  cublasLtMatmulDescOpaque_t desc;
  PTERUN_CUBLAS_CHECK(cublasLtMatmulDescInit(&desc, compute, CUDA_R_32F));
  set(&desc, CUBLASLT_MATMUL_DESC_TRANSA, &a.op, sizeof(a.op));
  set(&desc, CUBLASLT_MATMUL_DESC_TRANSB, &b.op, sizeof(b.op));
  const cublasLtEpilogue_t epilogue =
      bias != nullptr ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                      : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  set(&desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  if (bias != nullptr) set(&desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  cublasLtMatrixLayoutOpaque_t la, lb, ld;
  layout(la, type, a.op, rows, k, a.ld);
  layout(lb, type, b.op, k, cols, b.ld);
  layout(ld, type, CUBLAS_OP_N, rows, cols, ldd);

  Key key;
  std::memset(&key, 0, sizeof key);
  key.device = device(ctx);
  key.type = static_cast<int>(type);
  key.compute = static_cast<int>(compute);
  key.op_a = static_cast<int>(a.op);
  key.op_b = static_cast<int>(b.op);
  key.epilogue = static_cast<int>(epilogue);
  key.has_c = c_in != nullptr ? 1 : 0;
  key.rows = rows;
  key.cols = cols;
  key.k = k;
  key.lda = a.ld;
  key.ldb = b.ld;
  key.ldd = ldd;
  key.align_a = address_alignment(a.data);
  key.align_b = address_alignment(b.data);
  key.align_d = address_alignment(d);
  key.align_c = c_in != nullptr ? address_alignment(c_in) : key.align_d;
  key.align_bias = address_alignment(bias);

  static std::mutex mutex;
  static std::unordered_map<Key, Choice, BytesHash<Key>, BytesEqual<Key>> chosen;
  Choice choice;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = chosen.find(key);
    if (it == chosen.end()) {
      cublasLtMatmulPreferenceOpaque_t pref;
      PTERUN_CUBLAS_CHECK(cublasLtMatmulPreferenceInit(&pref));
      const uint64_t workspace = lt.workspace_bytes;
      PTERUN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
          &pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
      const cublasLtMatmulPreferenceAttributes_t aligns[] = {
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
      const uint32_t values[] = {key.align_a, key.align_b, key.align_c, key.align_d};
      for (int i = 0; i < 4; ++i) {
        PTERUN_CUBLAS_CHECK(
            cublasLtMatmulPreferenceSetAttribute(&pref, aligns[i], &values[i], sizeof values[i]));
      }
      cublasLtMatmulHeuristicResult_t results[kCandidates]{};
      int found = 0;
      const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
          lt.handle, &desc, &la, &lb, &ld, &ld, &pref, kCandidates, results, &found);
      Choice c;
      const int pick =
          status == CUBLAS_STATUS_SUCCESS ? preferred(results, found, rows * cols) : -1;
      c.found = pick >= 0;
      if (c.found) c.algo = results[pick].algo;
      it = chosen.emplace(key, c).first;
    }
    choice = it->second;
  }
  if (!choice.found) return false;
  const float beta = c_in != nullptr ? 1.0f : 0.0f;
  const void* c_data = c_in != nullptr ? c_in : d;
  PTERUN_CUBLAS_CHECK(cublasLtMatmul(lt.handle, &desc, &alpha, a.data, &la, b.data, &lb, &beta,
                                     c_data, &ld, d, &ld, &choice.algo, lt.workspace,
                                     lt.workspace_bytes, stream(ctx)));
  return true;
}

}  // namespace pterun::cuda::nn
