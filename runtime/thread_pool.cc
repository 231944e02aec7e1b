#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace graphjit {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  if (num_threads_ <= 1) return;
  for (int i = 0; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
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

void ThreadPool::Schedule(std::function<void()> task) {
  if (workers_.empty()) {
    task();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
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
  std::atomic<int64_t> remaining(blocks - 1);
  std::mutex done_mu;
  std::condition_variable done_cv;
  for (int64_t b = 1; b < blocks; ++b) {
    Schedule([&, b] {
      int64_t begin = b * per, end = std::min(n, begin + per);
      if (begin < end) fn(begin, end);
      if (remaining.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(done_mu);
        done_cv.notify_one();
      }
    });
  }
  fn(0, std::min(n, per));
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return remaining.load() == 0; });
}

}  // namespace graphjit
