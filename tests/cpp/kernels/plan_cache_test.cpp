// PlanCache (backend/cpu/ops/plan_cache.h): a plan is made once per key and
// kept, the least recently used one goes when the cache is full, and the
// last keys found (compared before hashing) always name live plans.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "pterun/backend/cpu/ops/plan_cache.h"

namespace pterun::cpu {
namespace {

PlanKey key_of(int64_t v) {
  PlanKey k;
  k.add({7, v});
  return k;
}

struct Counted {
  int64_t made_for = -1;
  int uses = 0;
};

class PlanCacheTest : public ::testing::Test {
 protected:
  /// The plan for v, counting how often each key's plan is made.
  Counted& get(PlanCache<Counted>& cache, int64_t v) {
    Counted& c = cache.get(key_of(v), [&] {
      ++made_[v];
      return Counted{v, 0};
    });
    EXPECT_EQ(c.made_for, v);
    ++c.uses;
    return c;
  }
  std::map<int64_t, int> made_;
};

TEST_F(PlanCacheTest, MakesEachPlanOnceAndKeepsItsState) {
  PlanCache<Counted> cache(16);
  for (int round = 0; round < 5; ++round) {
    for (int64_t v = 0; v < 12; ++v) get(cache, v);  // more keys than the recent ones
  }
  for (int64_t v = 0; v < 12; ++v) {
    EXPECT_EQ(made_[v], 1) << v;
    EXPECT_EQ(get(cache, v).uses, 6) << v;
  }
}

TEST_F(PlanCacheTest, EvictsTheLeastRecentlyUsed) {
  PlanCache<Counted> cache(2);
  get(cache, 1);
  get(cache, 2);
  get(cache, 1);  // 2 is now the least recently used
  get(cache, 3);  // evicts 2
  EXPECT_EQ(made_[1], 1);
  get(cache, 1);
  EXPECT_EQ(made_[1], 1);
  get(cache, 2);  // made again; evicts 3 (1 was used after it)
  EXPECT_EQ(made_[2], 2);
  get(cache, 1);
  EXPECT_EQ(made_[1], 1);
  get(cache, 3);
  EXPECT_EQ(made_[3], 2);
}

TEST_F(PlanCacheTest, PlansFoundAmongTheRecentKeysStayInTheCache) {
  // A plan used only through the recent keys between insertions is moved
  // to the front by its first lookup after each insertion, so a full cache
  // evicts the other one.
  PlanCache<Counted> cache(2);
  get(cache, 1);
  for (int i = 0; i < 10; ++i) get(cache, 1);
  get(cache, 2);
  for (int i = 0; i < 10; ++i) get(cache, 1);
  get(cache, 3);  // evicts 2, not 1
  get(cache, 1);
  EXPECT_EQ(made_[1], 1);
  get(cache, 2);
  EXPECT_EQ(made_[2], 2);
}

TEST_F(PlanCacheTest, RecentKeysNeverNameAnEvictedPlan) {
  // Cycling through more keys than the capacity: every lookup must give a
  // plan made for its own key (get() checks), never a freed one (ASan).
  PlanCache<Counted> cache(3);
  for (int round = 0; round < 20; ++round) {
    for (int64_t v = 0; v < 5; ++v) get(cache, (v * 7 + round) % 5);
  }
}

}  // namespace
}  // namespace pterun::cpu
