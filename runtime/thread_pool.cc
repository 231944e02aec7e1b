#include "runtime/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>

namespace graphjit {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

// The cores this process may run on (taskset, cgroups' cpusets), as TensorFlow counts them:
// a process pinned to one core gets one thread, not one per core of the machine.
int ThreadPool::DefaultThreads() {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0) return CPU_COUNT(&cpus);
  return std::max(1u, std::thread::hardware_concurrency());
}

std::shared_ptr<ThreadPool> ThreadPool::Shared(Role role, int num_threads) {
  static std::mutex mu;
  static std::map<std::pair<Role, int>, std::weak_ptr<ThreadPool>> pools;
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<ThreadPool>& slot = pools[{role, num_threads}];
  std::shared_ptr<ThreadPool> pool = slot.lock();
  if (pool == nullptr) {
    pool = std::make_shared<ThreadPool>(num_threads);
    slot = pool;
  }
  return pool;
}

void ThreadPool::Schedule(std::function<void()> task) {
  if (workers_.empty()) {
    task();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();
}

namespace {

// Waking a sleeping thread costs tens of microseconds on a VM, more than many kernels
// take; so a thread that runs out of work, or waits for helpers, spins this long
// before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

template <typename Pred>
bool SpinUntil(Pred done) {
  auto until = std::chrono::steady_clock::now() + kSpin;
  do {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      __builtin_ia32_pause();
    }
  } while (std::chrono::steady_clock::now() < until);
  return done();
}

}  // namespace

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    SpinUntil([this] { return queued_.load(std::memory_order_acquire) > 0; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() && !stop_) {
        sleeping_.fetch_add(1, std::memory_order_relaxed);
        const uint64_t wakes = wakes_;
        cv_.wait(lock, [&] { return stop_ || !queue_.empty() || wakes_ != wakes; });
        sleeping_.fetch_sub(1, std::memory_order_relaxed);
      }
      if (queue_.empty()) {
        if (stop_) return;
        continue;  // woken to spin
      }
      task = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    task();
  }
}

void ThreadPool::Wake() {
  if (sleeping_.load(std::memory_order_relaxed) == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++wakes_;
  }
  cv_.notify_all();
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_block, const std::function<void(int64_t, int64_t)>& fn, bool wake_sleepers,
                             bool one_block_per_thread) {
  if (n <= 0) return;
  min_block = std::max<int64_t>(1, min_block);
  // A few blocks per thread, claimed by whichever thread is free: a helper that wakes
  // late, or is preempted, leaves its share to the others instead of holding them up.
  // The caller claims from the front and the helpers from the back, so that when all
  // keep pace, consecutive ParallelFors give each thread the same part of the range
  // (and of the data, still in its core's cache).
  const int64_t blocks_per_thread = one_block_per_thread ? 1 : 4;
  const int64_t blocks = std::min<int64_t>(n / min_block, blocks_per_thread * num_threads_);
  if (blocks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  // Shared with the helpers: one may arrive after the caller has returned, and then
  // finds no block left (it touches `fn` only through a block it claimed).
  struct Sync {
    std::atomic<uint64_t> ends;  // (the next front block) << 32 | (one past the next back block)
    std::atomic<int64_t> unfinished;
    std::mutex mu;
    std::condition_variable cv;
  };
  auto sync = std::make_shared<Sync>();
  sync->ends.store(static_cast<uint64_t>(blocks));
  sync->unfinished.store(blocks);
  // Runs blocks until none is left to claim; true if it finished the last one.
  auto run_blocks = [&fn, n, blocks](Sync& s, bool front) {
    bool last = false;
    for (;;) {
      uint64_t ends = s.ends.load(std::memory_order_relaxed), claimed;
      int64_t b;
      do {
        const int64_t lo = static_cast<int64_t>(ends >> 32), hi = static_cast<int64_t>(ends & 0xffffffffu);
        if (lo >= hi) return last;
        b = front ? lo : hi - 1;
        claimed = front ? ends + (uint64_t{1} << 32) : ends - 1;
      } while (!s.ends.compare_exchange_weak(ends, claimed, std::memory_order_relaxed));
      fn(n * b / blocks, n * (b + 1) / blocks);
      last = s.unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1;
    }
  };
  const int64_t available = static_cast<int64_t>(workers_.size()) - (wake_sleepers ? 0 : sleeping_.load());
  const int64_t helpers = std::min<int64_t>(blocks - 1, available);
  if (helpers <= 0) {
    fn(0, n);
    return;
  }
  for (int64_t h = 0; h < helpers; ++h) {
    Schedule([run_blocks, sync] {
      if (run_blocks(*sync, /*front=*/false)) {
        std::lock_guard<std::mutex> lock(sync->mu);
        sync->cv.notify_one();
      }
    });
  }
  run_blocks(*sync, /*front=*/true);
  if (SpinUntil([&] { return sync->unfinished.load(std::memory_order_acquire) == 0; })) return;
  std::unique_lock<std::mutex> lock(sync->mu);
  sync->cv.wait(lock, [&] { return sync->unfinished.load() == 0; });
}

}  // namespace graphjit
