// Threads kept between kernel calls. Starting and joining two threads costs about 50 us on the
// machines measured (docs/sharding.md), and a band solve makes tens of thousands of small calls
// (7x7/3 at a quarter of its table: 48,000): started per call, the threads took a tenth of it.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cck {

/** The CPU's hint that this thread is spinning (lets the core's other thread run). */
inline void cpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/**
 * run(n, body) calls body(0) on the calling thread and body(t), t in [1, n), on the pool's threads
 * that start it before body(0) returns: the others skip the run. So body must take its work from
 * counters shared by the run's threads (forEachUnit, collectOutboxes), never a part fixed by t,
 * and body(0) alone does all of it when no other thread came. A helper whose core is busy with
 * another process wakes milliseconds late: waiting for it made the small calls of a band solve
 * take 3x longer on 2 threads than on 1 beside one other busy process (4x4/6 in 16 bands).
 * The threads are started the first time that many are asked for and kept until the pool is
 * destroyed. `body` must not throw (forEachUnit keeps each thread's exception). One run at a time
 * uses the kept threads; a run that finds them busy (another JS thread calling the same kernel)
 * starts threads of its own, each of which runs its body(t).
 */
class ThreadPool {
 public:
  ThreadPool() = default;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& th : threads_) th.join();
  }

  /** Threads started so far (for the self-test). */
  size_t started() const { return threads_.size(); }

  template <class Body>
  void run(int n, Body&& body) {
    if (n <= 1) {
      body(0);
      return;
    }
    std::unique_lock<std::mutex> own(runMutex_, std::try_to_lock);
    if (!own.owns_lock()) return runOnNewThreads(n, body);
    // More threads first: a thread that cannot be started throws here, before any work is posted.
    while (threads_.size() < static_cast<size_t>(n - 1)) {
      const int t = static_cast<int>(threads_.size()) + 1;
      threads_.emplace_back([this, t] { serve(t); });
    }
    const std::function<void(int)> job = std::ref(body);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      jobThreads_ = n;
      closed_ = false;
      generation_++;
      posted_.store(generation_, std::memory_order_release);
    }
    wake_.notify_all();
    // Closed and its joined threads waited for however body(0) ends (a throw included: they
    // must not outlive `job`).
    struct Close {
      ThreadPool& pool;
      ~Close() { pool.closeAndWait(); }
    } close{*this};
    body(0);
  }

 private:
  /** Pool thread t (1, 2, ...): each new run with more than t threads runs body(t). */
  void serve(int t) {
    uint64_t seen = 0;
    bool worked = false;  // in the last run: only then is another likely to follow at once
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (worked && !stopping_ && generation_ == seen) {
        // A band solve's calls come a fraction of a millisecond apart: a thread that waits for
        // the next one a little before it sleeps starts it without the wake-up's latency.
        lock.unlock();
        spinWhile([&] { return posted_.load(std::memory_order_acquire) == seen; });
        lock.lock();
      }
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      // Joined under the mutex, before the run is closed, or not at all (its body may be gone).
      worked = t < jobThreads_ && !closed_;
      if (!worked) continue;
      running_.fetch_add(1, std::memory_order_relaxed);
      const std::function<void(int)>* job = job_;
      lock.unlock();
      (*job)(t);
      lock.lock();
      if (running_.fetch_sub(1, std::memory_order_release) == 1 && closed_) done_.notify_one();
    }
  }

  /** The run under way takes no more threads (those not started yet skip it); those that joined
   *  finish within a unit of work, usually: waited for a little before sleeping. */
  void closeAndWait() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    spinWhile([this] { return running_.load(std::memory_order_acquire) > 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return running_.load(std::memory_order_acquire) == 0; });
    job_ = nullptr;
  }

  template <class Body>
  static void runOnNewThreads(int n, Body& body) {
    std::vector<std::thread> pool;
    pool.reserve(n - 1);
    try {
      for (int t = 1; t < n; t++) pool.emplace_back([&body, t] { body(t); });
    } catch (...) {
      // A joinable std::thread destroyed calls std::terminate: the started ones finish and are
      // joined before the error goes up.
      for (std::thread& th : pool) th.join();
      throw;
    }
    body(0);
    for (std::thread& th : pool) th.join();
  }

  std::mutex runMutex_;  // held by the run using the kept threads
  std::mutex mutex_;     // guards what follows
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  int jobThreads_ = 0;
  bool closed_ = false;  // the run under way takes no more threads (its body(0) returned)
  uint64_t generation_ = 0;
  std::atomic<uint64_t> posted_{0};  // generation_, read without the mutex by spinning threads
  std::atomic<int> running_{0};      // pool threads in the run's body; changed under the mutex
  bool stopping_ = false;
  static constexpr std::chrono::microseconds kSpin{500};

  /** Spins (the CPU's pause hint) while `waiting()` holds, for at most kSpin. */
  template <class Waiting>
  static void spinWhile(Waiting waiting) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (waiting() && std::chrono::steady_clock::now() < until) cpuPause();
  }
};

}  // namespace cck
