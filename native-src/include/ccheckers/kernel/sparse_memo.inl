// What a sparse pass learns about each group's unknown states, kept for the next sparse pass of the
// same solve (core's SparsePassOptions.memo; the TS kernel's is solver-space/sparse-memo.ts). Included
// after table_parts.inl.
//
// A sparse visit that stops at an unknown child c (its blocker) leaves the state unknown; so does a
// visit of a state without moves. In the passes after, the same visit stops at c again for as long
// as c is unknown: the children before c were won or illegal (values never change back), and no
// child is lost (an unknown state has no lost child: every loss is propagated to all its parents
// at once, PassWorker::ChildScan). So the next pass need not generate the moves and rank the
// children of such a state while c is unknown: two loads say what its visit would. And a group
// whose every unknown state the memo lists (complete) needs no scan: the states the memo does not
// list were proven, so the next pass visits exactly the states it would have found by scanning,
// in the same order, with the same outcome (the same stats on one thread).
//
// 7x7/4 after pass 1: the draws (13 million stored states) and the states waiting on them are
// visited in every late pass; each visit reads some twenty children in a group rarely in cache.

#pragma pack(push, 4)
/** A state a sparse visit left unknown: its offset in its group, and the child its visit stopped
 *  at (kNoMoves: it has no moves). 12 bytes. */
struct MemoEntry {
  uint64_t blocker;
  uint32_t offset;
};
#pragma pack(pop)

class SparseMemo {
 public:
  static constexpr uint64_t kNoMoves = ~uint64_t{0};

  /** The memo for the solve `token` on `table` of `bytes` bytes, in at most `budget` bytes: what
   *  was kept for another solve, table or budget is dropped. False: no memory even for its lists'
   *  headers (the pass goes without). Call with the memo's lock held. */
  bool bind(uint64_t token, const uint8_t* table, size_t bytes, uint64_t budget, size_t groups) {
    if (token == token_ && table == table_ && bytes == bytes_ && budget == budget_ && lists_.size() == groups) return true;
    release();
    try {
      lists_.resize(groups);
      complete_.assign(groups, 0);
    } catch (const std::bad_alloc&) {  // the memo saves time, never memory
      release();
      return false;
    }
    token_ = token;
    table_ = table;
    bytes_ = bytes;
    budget_ = budget;
    return true;
  }

  /** Every unknown state of group g is listed (in increasing offset): the pass needs no scan. */
  bool complete(size_t g) const { return complete_[g] != 0; }
  const std::vector<MemoEntry>& entries(size_t g) const { return lists_[g]; }

  /** Group g's visits are done: `fresh`, every state they left unknown, is its list from now on
   *  (complete), if the budget holds it; else it has none. Only the thread that visited g calls
   *  this for g. */
  void endGroup(size_t g, const std::vector<MemoEntry>& fresh) {
    std::vector<MemoEntry>& list = lists_[g];
    used_.fetch_sub(list.size() * sizeof(MemoEntry));
    complete_[g] = 0;
    std::vector<MemoEntry>().swap(list);
    const uint64_t bytes = fresh.size() * sizeof(MemoEntry);
    if (used_.fetch_add(bytes) + bytes > budget_) {
      used_.fetch_sub(bytes);
      return;
    }
    try {
      list = std::vector<MemoEntry>(fresh.begin(), fresh.end());  // exactly its size: the budget counts it
    } catch (const std::bad_alloc&) {  // the memo saves time, never memory: g goes without a list
      used_.fetch_sub(bytes);
      return;
    }
    complete_[g] = 1;
  }

  /** Bytes the lists hold. */
  uint64_t used() const { return used_.load(); }

  /** Drops every list (the solve's sparse passes are over). Call with the memo's lock held. */
  void release() {
    std::vector<std::vector<MemoEntry>>().swap(lists_);
    std::vector<uint8_t>().swap(complete_);
    used_.store(0);
    token_ = 0;
    table_ = nullptr;
    bytes_ = 0;
    budget_ = 0;
  }

  std::mutex mutex;  // one call at a time uses the memo

 private:
  uint64_t token_ = 0;  // 0: no solve
  const uint8_t* table_ = nullptr;
  size_t bytes_ = 0;
  uint64_t budget_ = 0;
  std::vector<std::vector<MemoEntry>> lists_;
  std::vector<uint8_t> complete_;
  std::atomic<uint64_t> used_{0};
};
