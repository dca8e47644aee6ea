// A unit of work that one thread lists and every thread of a kernel call may visit: the solver's
// pass units (kernel/phases.inl, passUnit). Without a board or engine, so that the self-test
// drives it on its own.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <utility>

#include "ccheckers/thread_pool.hpp"

namespace cck {

/** A wait in a spin loop: the CPU's pause at first, then the thread's time slice given up (the
 *  thread waited for may be off its core when threads outnumber cores). */
class SpinBackoff {
 public:
  void pause() {
    if (spins_ < kPauses) {
      spins_++;
      cpuPause();
    } else {
      std::this_thread::yield();
    }
  }

 private:
  static constexpr int kPauses = 1024;
  int spins_ = 0;
};

/**
 * The unit a thread is visiting, open to the other threads of its kernel call once they have no
 * unit left to take (helpWithOpenUnits). Without them, the last units of a call keep one thread
 * busy while the others wait: 7x7/3 in bands makes calls of about 9 units on 2 threads, and its
 * threads waited 1.7 of their 24.6 seconds in UNITS so (docs/sharding.md).
 *
 * The thread that took the unit (its owner) marks it listing (Listing), lists its states, opens
 * them (open), and then it and its helpers take kChunk states at a time (takeChunks). The owner
 * closes the unit and waits for the helpers inside to leave before its states' memory is used
 * again. `State`: a listed state; `Context`: what a visit needs besides (the unit's own data).
 */
template <class State, class Context>
struct alignas(64) OpenUnit {
  enum Phase : int { kIdle, kListing, kOpen };
  static constexpr size_t kChunk = 128;  // about 20 us of a pass's visits
  std::atomic<int> phase{kIdle};
  std::atomic<int> helpers{0};  // threads other than the owner inside
  // Apart from what visits read: helpers take chunks while the owner visits.
  alignas(64) std::atomic<size_t> next{0};  // the first state, in visit order, no thread took
  // Written while the unit is not open; read by a helper only after it counted itself in
  // `helpers` and then saw the unit open (both seq_cst: the owner, closing, waits for it).
  const State* states = nullptr;
  size_t count = 0;
  size_t start = 0;  // visit order: states[(start + i) mod count]
  Context context{};

  /** The owner's hold on the unit, from before its listing to its end: closes the unit when it
   *  goes, an exception included (helpers must never read states that are freed or reused). */
  class Listing {
   public:
    explicit Listing(OpenUnit& u) : u_(u) { u_.phase.store(kListing, std::memory_order_relaxed); }
    Listing(const Listing&) = delete;
    Listing& operator=(const Listing&) = delete;
    ~Listing() { close(); }
    /** Closed, and every helper gone (their visits done). */
    void close() {
      if (!std::exchange(open_, false)) return;
      u_.phase.store(kIdle);
      for (SpinBackoff wait; u_.helpers.load() != 0;) wait.pause();
    }

   private:
    OpenUnit& u_;
    bool open_ = true;
  };

  /** The owner opens its listed states, `first` the first in visit order. */
  void open(const State* listed, size_t n, size_t first, const Context& c) {
    states = listed;
    count = n;
    start = first;
    context = c;
    next.store(0, std::memory_order_relaxed);
    phase.store(kOpen);
  }

  /** The state i of the visit order. */
  const State& at(size_t i) const { return states[start + i < count ? start + i : start + i - count]; }

  /** Takes chunks until no state is left, calling visit(from, to) on each (visit order). Returns
   *  whether it took any. */
  template <class Visit>
  bool takeChunks(Visit&& visit) {
    bool took = false;
    for (size_t c; (c = next.fetch_add(kChunk, std::memory_order_relaxed)) < count; took = true) visit(c, std::min(count, c + kChunk));
    return took;
  }
};

/**
 * Thread `thread`, with no unit left to take, helps the others of units[0, threads) with the
 * units they are listing or visiting, until none has a state left to take: visit(u, from, to) on
 * the chunks it takes, then helped(u) after each unit it took any of. (Each thread has at most one
 * unit then: the units were all taken, one at a time.)
 */
template <class State, class Context, class Visit, class Helped>
void helpWithOpenUnits(OpenUnit<State, Context>* units, int threads, int thread, Visit&& visit, Helped&& helped) {
  using Unit = OpenUnit<State, Context>;
  if (threads < 2) return;
  // A thread that took the last units just before this one looked may not have marked its unit
  // yet (Listing comes first in its visit, nanoseconds after): a few empty scans more before
  // leaving.
  constexpr int kEmptyScans = 64;
  SpinBackoff wait;
  for (int empty = 0; empty < kEmptyScans;) {
    bool more = false;  // a unit being listed (open soon), or one helped (look again)
    for (int o = 0; o < threads; o++) {
      Unit& u = units[o];
      const int phase = o == thread ? Unit::kIdle : u.phase.load(std::memory_order_acquire);
      if (phase == Unit::kListing) more = true;
      if (phase != Unit::kOpen) continue;
      // Counted in first, then seen still open: the owner waits for this thread before it reuses
      // the states (Listing::close).
      u.helpers.fetch_add(1);
      struct Leave {
        std::atomic<int>& helpers;
        ~Leave() { helpers.fetch_sub(1, std::memory_order_release); }
      } leave{u.helpers};
      if (u.phase.load() == Unit::kOpen && u.takeChunks([&](size_t from, size_t to) { visit(u, from, to); })) {
        helped(u);
        more = true;
      }
    }
    empty = more ? 0 : empty + 1;
    wait.pause();
  }
}

}  // namespace cck
