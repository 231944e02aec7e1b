// A fixed set of worker threads, and ParallelFor on top of it. A pool of N threads
// has N - 1 workers: the thread that hands it work is the N-th (ParallelFor runs a
// block on it; the executor keeps running the nodes it does not hand off), so N
// threads never compete for N cores with a caller waiting on them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace graphjit {

class ThreadPool {
 public:
  // num_threads <= 1 creates no threads: Schedule and ParallelFor then run inline.
  // Schedule runs on a worker, so a pool of 2 runs one scheduled task at a time.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  void Schedule(std::function<void()> task);
  // Wakes the workers that sleep, to spin for a while: a caller about to hand out work
  // calls it first, so that their wake-up (tens of microseconds on a VM) overlaps its own.
  void Wake();

  // Runs fn(begin, end) over [0, n) in blocks of at least `min_block` items (a few per
  // thread), each claimed by whichever of the pool's threads and the caller's is free;
  // returns when all blocks are done. Without `wake_sleepers`, only workers that are
  // awake (spinning) help: for work that takes less time than waking one. With
  // `one_block_per_thread`, blocks are as few as the threads: for calls with a fixed cost
  // each (a oneDNN GEMM packs its operands).
  void ParallelFor(int64_t n, int64_t min_block, const std::function<void(int64_t, int64_t)>& fn, bool wake_sleepers = true,
                   bool one_block_per_thread = false);

  // Number of cores this process may run on (its CPU affinity, as taskset or a cpuset set it).
  static int DefaultThreads();

  // The process's pool for `role` with `num_threads` threads, alive while someone holds
  // it. Sessions share these, as TensorFlow's do by default: two sessions with pools of
  // their own would keep twice the workers spinning on the same cores. Inter-op and
  // intra-op work never share one pool (a node waiting in ParallelFor on the pool that
  // runs it could wait for itself).
  enum class Role { kInterOp, kIntraOp };
  static std::shared_ptr<ThreadPool> Shared(Role role, int num_threads);

 private:
  void WorkerLoop();

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int> queued_{0};    // queue_.size(), readable without the lock
  std::atomic<int> sleeping_{0};  // workers waiting on cv_
  uint64_t wakes_ = 0;            // Wake() calls that found a worker asleep
  bool stop_ = false;
};

}  // namespace graphjit
