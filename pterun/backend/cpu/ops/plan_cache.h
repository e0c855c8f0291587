#pragma once

// Plans and other things derived per problem, kept per thread: PlanKey (a
// problem's integers) and PlanCache (a least-recently-used map). Used by
// the oneDNN primitives (dnnl_util.h) and the own kernels' packed weights.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <list>
#include <unordered_map>
#include <utility>

#include "pterun/core/error.h"

namespace pterun::cpu {

/// A fixed-capacity key of integers (shapes, strides, flags).
class PlanKey {
 public:
  static constexpr size_t kCapacity = 64;
  void add(int64_t v) {
    PTERUN_CHECK(size_ < kCapacity, ErrorCode::Internal, "plan key: too many fields");
    values_[size_++] = v;
  }
  void add(std::initializer_list<int64_t> vs) {
    for (int64_t v : vs) add(v);
  }
  void add_float(double v) {
    int64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    add(bits);
  }
  bool operator==(const PlanKey& o) const {
    return size_ == o.size_ && std::memcmp(values_.data(), o.values_.data(), size_ * 8) == 0;
  }
  size_t hash() const {
    // 64-bit FNV-1a over the fields, mixing whole words.
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size_; ++i) {
      h ^= static_cast<uint64_t>(values_[i]);
      h *= 1099511628211ull;
      h ^= h >> 29;
    }
    return static_cast<size_t>(h);
  }

 private:
  std::array<int64_t, kCapacity> values_{};
  size_t size_ = 0;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const { return k.hash(); }
};

/// A map from keys to plans that evicts about the least recently used when
/// full (a plan found among the last keys moves to the front only at its
/// first lookup after an insertion). One instance per thread
/// (thread_local at the call site): lookups take no lock, concurrent runs
/// of one method on several threads never share a plan's memory objects,
/// and a hit allocates nothing.
template <typename Plan, typename Key = PlanKey, typename KeyHash = PlanKeyHash>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}

  /// The plan for `key`, built by `make()` (returning a Plan) on a miss.
  /// The reference stays valid until the next get() on this cache.
  template <typename Make>
  Plan& get(const Key& key, Make&& make) {
    // The last few keys found, compared before hashing: a method's tiny
    // layers look up a handful of plans on every call. Only an insertion
    // evicts, and it clears them, so each points at a live entry; a plan
    // found here is not moved to the front, but after every insertion its
    // next lookup goes through the map and moves it.
    for (size_t i = 0; i < recent_count_; ++i) {
      if (recent_[i].first == key) return *recent_[i].second;
    }
    auto it = index_.find(key);
    if (it != index_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      return remember(key, it->second->second);
    }
    Plan plan = make();
    if (index_.size() >= capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
    recent_count_ = recent_next_ = 0;
    entries_.emplace_front(key, std::move(plan));
    index_.emplace(key, entries_.begin());
    return remember(key, entries_.front().second);
  }

 private:
  using Entry = std::pair<Key, Plan>;
  static constexpr size_t kRecent = 8;

  Plan& remember(const Key& key, Plan& plan) {
    recent_[recent_next_] = {key, &plan};
    recent_next_ = (recent_next_ + 1) % kRecent;
    recent_count_ = std::min(recent_count_ + 1, kRecent);
    return plan;
  }

  size_t capacity_;
  std::list<Entry> entries_;
  std::unordered_map<Key, typename std::list<Entry>::iterator, KeyHash> index_;
  std::array<std::pair<Key, Plan*>, kRecent> recent_{};
  size_t recent_count_ = 0, recent_next_ = 0;
};

}  // namespace pterun::cpu
