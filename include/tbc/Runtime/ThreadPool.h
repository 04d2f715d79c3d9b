//===- ThreadPool.h - a few persistent workers for row-parallel kernels ---===//
//
// Kernels run for microseconds, so threads are started once and woken per
// call; the calling thread takes part 0 itself.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_THREADPOOL_H
#define TBC_RUNTIME_THREADPOOL_H

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }
  unsigned size() const { return unsigned(workers_.size()) + 1; }

  /// Runs fn(0) ... fn(size() - 1) and waits for all: concurrently, or,
  /// when another thread's run() holds the workers (two sessions on two
  /// threads), one after another on the calling thread. The parts are
  /// independent shares of one kernel, so either order gives the same
  /// result; the pool never hands a second caller's task to workers still
  /// busy with the first's.
  void run(const std::function<void(unsigned)> &fn) {
    std::unique_lock<std::mutex> owner(runMutex_, std::try_to_lock);
    if (!owner.owns_lock()) {
      for (unsigned part = 0; part < size(); ++part)
        fn(part);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &fn;
      pending_ = unsigned(workers_.size());
      ++generation_;
    }
    wake_.notify_all();
    fn(0);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

  /// One pool per process, as wide as the machine.
  static ThreadPool &shared() {
    static ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
    return pool;
  }

private:
  void work(unsigned index) {
    uint64_t seen = 0;
    while (true) {
      const std::function<void(unsigned)> *task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
        task = task_;
      }
      (*task)(index);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--pending_ == 0)
          done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex runMutex_; // held by the one run() the workers serve
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)> *task_ = nullptr;
  unsigned pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

} // namespace tbc::rt

#endif // TBC_RUNTIME_THREADPOOL_H
