//===- ThreadPool.h - a few persistent workers for row-parallel kernels ---===//
//
// Kernels run for microseconds, so threads are started once and woken per
// call; the calling thread takes part 0 itself. A decode step is some 25
// kernel calls of tens of microseconds each, and a futex wake-up costs
// about as much, so workers and the caller first spin for a while
// on the generation and pending counters, and only then sleep on the
// condition variables (TBC_SPIN_US sets how long).
//
// A part belongs to whichever thread claims it first, not to a fixed one:
// on a shared or virtual machine a worker is sometimes not running when a
// kernel starts (another process holds its core, or the hypervisor), and
// waiting for it to wake made the others idle for its whole share; now the
// caller, once done with its own part, claims the late worker's and runs
// it, and waits only for parts already under way.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_THREADPOOL_H
#define TBC_RUNTIME_THREADPOOL_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace tbc::rt {

class ThreadPool {
public:
  explicit ThreadPool(unsigned threads) {
    for (unsigned i = 1; i < threads; ++i)
      workers_.emplace_back([this, i] { work(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }
  unsigned size() const { return unsigned(workers_.size()) + 1; }

  /// Runs fn(0) ... fn(size() - 1) and waits for all: concurrently, each
  /// part on whichever thread claims it first, or, when another thread's
  /// run() holds the workers (two sessions on two threads), one after
  /// another on the calling thread. The parts are independent shares of
  /// one kernel, so either order gives the same result; the pool never
  /// hands a second caller's task to workers still busy with the first's.
  void run(const std::function<void(unsigned)> &fn) {
    std::unique_lock<std::mutex> owner(runMutex_, std::try_to_lock);
    if (!owner.owns_lock()) {
      for (unsigned part = 0; part < size(); ++part)
        fn(part);
      return;
    }
    uint32_t generation;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &fn;
      pending_.store(size(), std::memory_order_relaxed);
      generation = uint32_t(generation_.load(std::memory_order_relaxed) + 1);
      claims_.store(uint64_t(generation) << 32, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    runClaimed(&fn, generation);
    if (spinUntil([this] { return pending_.load(std::memory_order_acquire) == 0; }))
      return;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
  }

  /// One pool per process: TBC_THREADS threads, else one per CPU this
  /// process may run on. The CPUs of its affinity mask (taskset, a
  /// container's cpuset), not the machine's: two threads pinned to one CPU
  /// take turns at every kernel's barrier (a hidden-2048 decode under
  /// `taskset -c 0`: 60 tokens/s with two threads, 73-76 with one).
  static ThreadPool &shared() {
    static ThreadPool pool(defaultThreads());
    return pool;
  }
  static unsigned defaultThreads() {
    if (const char *v = std::getenv("TBC_THREADS")) {
      long n = std::strtol(v, nullptr, 10);
      if (n > 0)
        return unsigned(std::min(n, 1024L));
    }
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
      return unsigned(CPU_COUNT(&set));
#endif
    return std::max(1u, std::thread::hardware_concurrency());
  }

private:
  /// Spins until `ready()` or spinTime() has passed; whether it became ready.
  template <typename Ready> static bool spinUntil(Ready ready) {
    auto start = std::chrono::steady_clock::now();
    while (true) {
      for (int i = 0; i < 64; ++i) {
        if (ready())
          return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      if (std::chrono::steady_clock::now() - start > spinTime())
        return false;
    }
  }

  /// Claims the next part of task `generation` not yet claimed: false when
  /// none is left or a newer task has replaced it (a worker that woke late).
  bool claim(uint32_t generation, unsigned &part) {
    uint64_t state = claims_.load(std::memory_order_relaxed);
    while (true) {
      if (uint32_t(state >> 32) != generation || uint32_t(state) >= size())
        return false;
      if (claims_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
        part = unsigned(uint32_t(state));
        return true;
      }
    }
  }

  /// Runs parts of task `generation` until none is left unclaimed; the
  /// thread that finishes the last part wakes a caller that stopped
  /// spinning (under the mutex, so that the wake-up cannot fall between the
  /// caller's check and its sleep).
  void runClaimed(const std::function<void(unsigned)> *fn, uint32_t generation) {
    unsigned part;
    while (claim(generation, part)) {
      (*fn)(part);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }

  void work(unsigned) {
    uint64_t seen = 0;
    while (true) {
      spinUntil([&] {
        return generation_.load(std::memory_order_acquire) != seen ||
               stop_.load(std::memory_order_relaxed);
      });
      const std::function<void(unsigned)> *task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] {
          return stop_.load(std::memory_order_relaxed) ||
                 generation_.load(std::memory_order_relaxed) != seen;
        });
        if (stop_.load(std::memory_order_relaxed))
          return;
        seen = generation_.load(std::memory_order_relaxed);
        task = task_;
      }
      // A task already finished by the others (and perhaps replaced, its
      // function gone) has no part left to claim: `task` is not called.
      runClaimed(task, uint32_t(seen));
    }
  }

  /// How long to spin before sleeping: 200 us, or TBC_SPIN_US (0: sleep
  /// at once, for machines whose cores are shared with other work).
  static std::chrono::microseconds spinTime() {
    static const std::chrono::microseconds t{[] {
      const char *env = std::getenv("TBC_SPIN_US");
      long v = env ? std::strtol(env, nullptr, 10) : 200;
      return v < 0 ? 0L : v;
    }()};
    return t;
  }

  std::vector<std::thread> workers_;
  std::mutex runMutex_; // held by the one run() the workers serve
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)> *task_ = nullptr;
  std::atomic<unsigned> pending_{0}; // parts not yet finished
  // The task's generation (high 32 bits) and the next part to claim.
  std::atomic<uint64_t> claims_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

} // namespace tbc::rt

#endif // TBC_RUNTIME_THREADPOOL_H
