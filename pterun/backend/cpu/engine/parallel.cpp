// The helper threads behind parallel_for. Not OpenMP: GNU OpenMP's teams
// meet at a barrier after every region, so on a machine whose cores other
// processes share, one descheduled team member stalls the whole call for
// a scheduler slice per operator (milliseconds; docs/performance.md,
// "Threads"). Here the calling thread claims ranges like any helper (the
// caller from the front of a job, helpers from the back) and waits only
// for ranges a helper has already started; idle helpers spin briefly, then
// sleep on a futex (std::atomic::wait).

#include "pterun/backend/cpu/engine/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace pterun::cpu {
namespace {

thread_local int t_thread_index = 0;

// How long an idle helper spins before it sleeps: about the gap between
// two split operators of a small network (mobilenet_64 at 2 threads: 153
// µs per call spinning 50 µs, 143-146 µs spinning 200; one thread 149).
constexpr int kSpinMicros = 200;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// The job in flight, packed into one word so that a helper can claim a
/// range with one compare-and-swap and never reads a newer job's fields
/// by mistake: generation (20 bits), threads (8), ranges (12), and the
/// ranges still unclaimed, [front, back) (12 bits each). The caller claims
/// from the front, helpers from the back: on two threads each keeps the
/// same part of every operator (the same image rows, layer after layer, in
/// its own cache), and the ranges still balance a slow helper.
struct Ticket {
  uint64_t generation, threads, chunks, front, back;

  static Ticket unpack(uint64_t w) {
    return {w >> 44, (w >> 36) & 0xff, (w >> 24) & 0xfff, (w >> 12) & 0xfff, w & 0xfff};
  }
  uint64_t pack() const {
    return ((generation & 0xfffff) << 44) | (threads << 36) | (chunks << 24) | (front << 12) | back;
  }
};

/// Most ranges a job is split into (the Ticket's 12 bits).
constexpr int64_t kMaxChunks = 0xfff;

class Pool {
 public:
  /// Never destroyed: helpers may still sleep in it at exit, and a forked
  /// child (which has no helpers) still runs every range on its caller.
  static Pool& get() {
    static Pool* pool = new Pool();
    return *pool;
  }

  void run(int threads, int64_t n, int64_t chunks, void (*body)(void*, int64_t, int64_t),
           void* context) {
    // One job at a time; a nested call, or another thread's while one is
    // in flight, runs on its caller alone.
    bool idle = false;
    if (!busy_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
      body(context, 0, n);
      return;
    }
    struct Release {
      std::atomic<bool>& busy;
      ~Release() { busy.store(false, std::memory_order_release); }
    } release{busy_};
    threads = std::min(threads, 255);
    chunks = std::min<int64_t>(chunks, kMaxChunks);
    try {
      for (; helpers_ < threads - 1; ++helpers_) {
        std::thread helper([this, index = helpers_ + 1] { helper_loop(index); });
        handles_.push_back(helper.native_handle());
        helper.detach();
        owner_ = getpid();
        away_from_ = -1;  // the new helper has the caller's affinity
      }
    } catch (const std::system_error&) {
      // No more threads to be had: the caller takes the ranges of the
      // helpers that do not exist.
    }
    keep_helpers_off(sched_getcpu());
    n_ = n;
    body_ = body;
    context_ = context;
    error_ = nullptr;
    done_.store(0, std::memory_order_relaxed);
    ++generation_;
    const Ticket t{generation_, static_cast<uint64_t>(threads), static_cast<uint64_t>(chunks), 0,
                   static_cast<uint64_t>(chunks)};
    ticket_.store(t.pack(), std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();

    work(0);
    // Only ranges a helper has claimed are left; wait for those.
    for (int spins = 0; done_.load(std::memory_order_acquire) < chunks; ++spins) {
      if (spins < 4096) {
        cpu_relax();
      } else {
        sched_yield();  // the helper may need this core to finish
      }
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Claims and runs ranges of the current job until none is left.
  void work(int index) {
    uint64_t word = ticket_.load(std::memory_order_acquire);
    for (;;) {
      const Ticket t = Ticket::unpack(word);
      if (static_cast<uint64_t>(index) >= t.threads || t.front >= t.back) return;
      Ticket claimed = t;
      if (index == 0) {
        ++claimed.front;
      } else {
        --claimed.back;
      }
      if (!ticket_.compare_exchange_weak(word, claimed.pack(), std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
        continue;
      }
      // The caller waits for this range, so the job's fields stay valid.
      const auto chunks = static_cast<int64_t>(t.chunks);
      const auto i = static_cast<int64_t>(index == 0 ? t.front : claimed.back);
      const int saved = t_thread_index;
      t_thread_index = index;
      try {
        body_(context_, n_ * i / chunks, n_ * (i + 1) / chunks);
      } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      t_thread_index = saved;
      done_.fetch_add(1, std::memory_order_acq_rel);
      word = ticket_.load(std::memory_order_acquire);
    }
  }

  void helper_loop(int index) {
    t_thread_index = index;
    uint32_t seen = epoch_.load(std::memory_order_acquire);
    for (;;) {
      // Spin a little (the next operator of a call usually follows within
      // microseconds), then sleep until the next job.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
      for (int i = 0; epoch_.load(std::memory_order_acquire) == seen; ++i) {
        cpu_relax();
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) {
          epoch_.wait(seen, std::memory_order_acquire);
        }
      }
      seen = epoch_.load(std::memory_order_acquire);
      work(index);
    }
  }

  // Keeps the helpers off the caller's CPU: their affinity becomes the
  // caller's less that CPU, set again only when the caller moves. A helper
  // woken after its CPU idled a while (40 ms on the 2-vCPU VM) was
  // otherwise often put on the caller's CPU by the scheduler, where the
  // two shared one core for milliseconds until load balancing moved it:
  // calls right after a pause ran at one thread's speed.
  void keep_helpers_off(int cpu) {
    // (A forked child has the handles but not the threads.)
    if (cpu == away_from_ || handles_.empty() || getpid() != owner_) return;
    away_from_ = cpu;
    cpu_set_t allowed;
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(allowed), &allowed) != 0 ||
        !CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2) {
      return;
    }
    CPU_CLR(cpu, &allowed);
    for (pthread_t h : handles_) pthread_setaffinity_np(h, sizeof(allowed), &allowed);
  }

  std::atomic<bool> busy_{false};
  int helpers_ = 0;  // started so far (threads 1, 2, ...)
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> epoch_{0};
  std::atomic<int64_t> done_{0};
  std::vector<pthread_t> handles_;  // the helpers, which never exit
  int away_from_ = -1;              // the CPU the helpers' affinity leaves out
  pid_t owner_ = 0;                 // the process that started them
  uint64_t generation_ = 0;
  int64_t n_ = 0;
  void (*body_)(void*, int64_t, int64_t) = nullptr;
  void* context_ = nullptr;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace

int parallel_thread_index() {
  return t_thread_index;
}

namespace detail {

void run_parallel(int threads, int64_t n, int64_t chunks,
                  void (*body)(void* context, int64_t begin, int64_t end), void* context) {
  Pool::get().run(threads, n, chunks, body, context);
}

}  // namespace detail

}  // namespace pterun::cpu
