// runtime/: the thread pool and the allocator's block reuse.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/allocator.h"
#include "runtime/thread_pool.h"

namespace graphjit {
namespace {

// A process pinned to one core (taskset -c 0, as benchmarks pin TensorFlow) gets one thread
// by default, not one per core of the machine.
TEST(ThreadPool, TheDefaultIsTheCoresTheProcessMayRunOn) {
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(ThreadPool::DefaultThreads(), CPU_COUNT(&all));
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(ThreadPool::DefaultThreads(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(n);
      std::mutex mu;
      std::set<std::thread::id> workers;
      pool.ParallelFor(n, 10, [&](int64_t b, int64_t e) {
        {
          std::lock_guard<std::mutex> lock(mu);
          workers.insert(std::this_thread::get_id());
        }
        for (int64_t i = b; i < e; ++i) hits[i]++;
        // Blocks go to whichever thread is free: slow ones leave some to the helpers.
        if (n >= 1000) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      });
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
      }
      if (threads > 1 && n >= 1000) {
        EXPECT_GT(workers.size(), 1u) << "n=" << n;
      }
    }
  }
}

TEST(ThreadPool, ParallelForDoesNotWaitForABusyWorker) {
  // The only worker is held by a task that ends when ParallelFor has returned (or after
  // 10 s): the caller must run every block itself instead of waiting for it.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> timed_out{false};
  ThreadPool pool(2);  // destroyed first: its worker is done with the above
  pool.Schedule(
      [released, &timed_out] { timed_out = released.wait_for(std::chrono::seconds(10)) == std::future_status::timeout; });
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(1000, 10, [&](int64_t b, int64_t e) { sum += e - b; });
  release.set_value();
  EXPECT_EQ(sum.load(), 1000);
  EXPECT_FALSE(timed_out.load()) << "ParallelFor waited for the busy worker";
}

TEST(ThreadPool, SmallWorkDoesNotWakeASleepingWorker) {
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the worker is asleep by now
  auto threads_used = [&](bool wake_sleepers) {
    std::mutex mu;
    std::set<std::thread::id> ids;
    pool.ParallelFor(
        8, 1,
        [&](int64_t, int64_t) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          std::lock_guard<std::mutex> lock(mu);
          ids.insert(std::this_thread::get_id());
        },
        wake_sleepers);
    return ids;
  };
  EXPECT_EQ(threads_used(false), std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(threads_used(true).size(), 2u);  // 8 blocks of 5 ms: the woken worker takes some
}

TEST(ThreadPool, ScheduledTasksAllRunBeforeDestruction) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(3);
    for (int i = 0; i < 500; ++i) pool.Schedule([&] { done++; });
  }
  EXPECT_EQ(done.load(), 500);
}

TEST(ThreadPool, NestedParallelForFromManyCallers) {
  ThreadPool outer(2), inner(2);
  std::atomic<int64_t> sum{0};
  outer.ParallelFor(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) inner.ParallelFor(1000, 10, [&](int64_t lo, int64_t hi) { sum += hi - lo; });
  });
  EXPECT_EQ(sum.load(), 8000);
}

TEST(Allocator, CountsAndReusesLargeBlocks) {
  Allocator a(/*max_allocation_bytes=*/int64_t{1} << 30, /*max_cached_bytes=*/int64_t{1} << 20);
  void* p = *a.Allocate(300 << 10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % Allocator::kAlignment, 0u);
  EXPECT_EQ(a.stats().bytes_in_use, 300 << 10);
  a.Deallocate(p, 300 << 10);
  EXPECT_EQ(a.stats().bytes_in_use, 0);
  void* q = *a.Allocate(299 << 10);  // same 4 KiB-rounded size class
  EXPECT_EQ(q, p);
  a.Deallocate(q, 299 << 10);
  // Beyond the cache cap, blocks go back to the system (no unbounded growth).
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(*a.Allocate(512 << 10));
  for (void* b : blocks) a.Deallocate(b, 512 << 10);
  EXPECT_EQ(a.stats().bytes_in_use, 0);
  EXPECT_EQ(a.stats().peak_bytes_in_use, 8 * (512 << 10));
  auto too_big = a.Allocate(size_t{2} << 30);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), Code::kResourceExhausted);
}

}  // namespace
}  // namespace graphjit
