#include "pterun/delegates/arena.h"

#include <algorithm>
#include <numeric>

namespace pterun::delegates {
namespace {

// Saturating: a plan that would overflow comes out as UINT64_MAX bytes,
// which no allocation satisfies.
uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t out;
  return __builtin_add_overflow(a, b, &out) ? UINT64_MAX : out;
}

uint64_t align_up(uint64_t v) {
  return sat_add(v, kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

}  // namespace

ArenaPlan plan_arena(std::span<const ArenaRequest> requests) {
  ArenaPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<size_t> placed;  // indices, in the order placed
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t i : order) {
    const ArenaRequest& r = requests[i];
    const uint64_t bytes = align_up(r.bytes);
    // The byte ranges of placed requests alive at the same time, by offset.
    busy.clear();
    for (size_t j : placed) {
      const ArenaRequest& o = requests[j];
      if (o.first <= r.last && r.first <= o.last) {
        busy.emplace_back(plan.offsets[j], sat_add(plan.offsets[j], align_up(o.bytes)));
      }
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= sat_add(offset, bytes)) break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.size = std::max(plan.size, sat_add(offset, bytes));
    placed.push_back(i);
  }
  return plan;
}

}  // namespace pterun::delegates
