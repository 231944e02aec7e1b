#include "runtime/thread_pool.h"

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

int ThreadPool::DefaultThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

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
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    task();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_block, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  min_block = std::max<int64_t>(1, min_block);
  int64_t blocks = std::min<int64_t>(n / min_block, num_threads_);
  if (blocks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  const int64_t per = (n + blocks - 1) / blocks;
  // Shared with the helpers, which may still be signalling after the caller has seen
  // the count reach zero and returned.
  struct Sync {
    std::atomic<int64_t> remaining;
    std::mutex mu;
    std::condition_variable cv;
  };
  auto sync = std::make_shared<Sync>();
  sync->remaining.store(blocks - 1);
  for (int64_t b = 1; b < blocks; ++b) {
    Schedule([&fn, sync, b, per, n] {
      int64_t begin = b * per, end = std::min(n, begin + per);
      if (begin < end) fn(begin, end);
      if (sync->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(sync->mu);
        sync->cv.notify_one();
      }
    });
  }
  fn(0, std::min(n, per));
  if (SpinUntil([&] { return sync->remaining.load(std::memory_order_acquire) == 0; })) return;
  std::unique_lock<std::mutex> lock(sync->mu);
  sync->cv.wait(lock, [&] { return sync->remaining.load() == 0; });
}

}  // namespace graphjit
