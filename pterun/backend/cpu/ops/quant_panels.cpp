#include "pterun/backend/cpu/ops/quant_panels.h"

#include <algorithm>
#include <array>

#include "pterun/backend/cpu/ops/plan_cache.h"
#include "pterun/backend/cpu/ops/quant_gemm.h"
#include "pterun/core/error.h"

namespace pterun::cpu {
namespace {

/// The weight's address and up to 4 numbers of its packing: small, so a
/// lookup on every call of a tiny layer costs little.
struct PanelKey {
  std::array<int64_t, 5> v{};
  bool operator==(const PanelKey& o) const { return v == o.v; }
};

struct PanelKeyHash {
  size_t operator()(const PanelKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

}  // namespace

PackedWeights& kept_panels(const int8_t* weight, std::initializer_list<int64_t> shape,
                           size_t bytes) {
  PTERUN_CHECK(shape.size() <= 4, ErrorCode::Internal, "kept_panels: more than 4 numbers");
  PanelKey key;
  key.v[0] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(weight));
  std::copy(shape.begin(), shape.end(), key.v.begin() + 1);
  thread_local PlanCache<PackedWeights, PanelKey, PanelKeyHash> cache(256);
  return cache.get(key, [&] { return PackedWeights(bytes); });
}

const uint8_t* kept_weight_panels(const int8_t* weight, uint64_t constant_id, int64_t n, int64_t k,
                                  bool a_unsigned) {
  const int64_t count = (n + 15) / 16, panel_bytes = qgemm_panel_bytes(k);
  const auto weight_bytes = static_cast<size_t>(n * k);
  PackedWeights& kept =
      kept_panels(weight, {1, n, k, a_unsigned ? 1 : 0}, static_cast<size_t>(count * panel_bytes));
  if (!kept.packed_from(weight, weight_bytes, constant_id)) {
    kept.forget();
    qgemm_pack(weight, k, n, k, !a_unsigned, 0, count, kept.panels());
    kept.remember(weight, weight_bytes, constant_id);
  }
  return kept.panels();
}

}  // namespace pterun::cpu
