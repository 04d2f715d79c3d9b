//===- ThreadPoolTest.cpp - parts run once each, by whoever claims them ---===//

#include "tbc/Runtime/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

using namespace tbc::rt;

namespace {

// Workers that sleep at once (no spinning) wake only after the caller has
// posted the task, so a caller that may claim any part reaches part 1 first
// in practice; set before any pool starts (spinTime() reads it once).
const bool kNoSpin = [] { return setenv("TBC_SPIN_US", "0", 1) == 0; }();

TEST(ThreadPool, EveryPartRunsExactlyOncePerRun) {
  ASSERT_TRUE(kNoSpin);
  ThreadPool pool(4);
  ASSERT_EQ(pool.size(), 4u);
  std::vector<std::atomic<int>> counts(4);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> onWorkers{0};
  for (int run = 0; run < 3000; ++run) {
    pool.run([&](unsigned part) {
      ASSERT_LT(part, 4u);
      // Parts of uneven length (up to some 50 us), long enough for the
      // workers to wake and claim some, so that claims race.
      volatile int spin = 0;
      for (int i = 0; i < int(1 + part) * (run % 7) * 2000; ++i)
        spin = spin + 1;
      if (std::this_thread::get_id() != caller)
        onWorkers.fetch_add(1);
      counts[part].fetch_add(1);
    });
    for (unsigned p = 0; p < 4; ++p)
      ASSERT_EQ(counts[p].exchange(0), 1) << "run " << run << ", part " << p;
  }
  EXPECT_GT(onWorkers.load(), 0); // the workers took part
}

TEST(ThreadPool, TheCallerTakesOverAPartNoWorkerHasStarted) {
  // With parts bound to threads, part 1 always ran on the worker and a
  // worker that was not running stalled every kernel until it woke.
  ASSERT_TRUE(kNoSpin);
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  int byCaller = 0;
  for (int run = 0; run < 2000; ++run) {
    std::atomic<bool> onCaller{false};
    pool.run([&](unsigned part) {
      if (part == 1 && std::this_thread::get_id() == caller)
        onCaller = true;
    });
    byCaller += onCaller;
  }
  EXPECT_GT(byCaller, 0);
}

TEST(ThreadPool, TwoCallersAtOnceBothFinish) {
  // The second caller runs its parts itself while the first holds the pool.
  ASSERT_TRUE(kNoSpin);
  ThreadPool pool(3);
  std::atomic<int> total{0};
  auto caller = [&] {
    for (int run = 0; run < 500; ++run)
      pool.run([&](unsigned) { total.fetch_add(1); });
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(total.load(), 2 * 500 * 3);
}

#if defined(__linux__)
TEST(ThreadPool, DefaultsToTheCpusThisProcessMayUse) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved))
    ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  unsetenv("TBC_THREADS");
  EXPECT_EQ(ThreadPool::defaultThreads(), 1u); // as under `taskset -c N`
  setenv("TBC_THREADS", "3", 1);
  EXPECT_EQ(ThreadPool::defaultThreads(), 3u);
  unsetenv("TBC_THREADS");
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(ThreadPool::defaultThreads(), unsigned(CPU_COUNT(&saved)));
}
#endif

} // namespace
