// The states a table leaves unknown, listed by pass unit (core's solver-space/unknown-lists.ts),
// for a listed pass: pass 1's units in proof order, visiting only those states. Included after
// phases.inl.
//
// A unit's states lie one per group across the table, but their children all lie in the one group
// of rot(P2), which stays in cache while the unit is visited (passUnit). After pass 1 of 7x7/4,
// 381 million states (2.4%) are unknown: a sparse pass visits them group by group, each visit
// fetching some twenty children from a group rarely in cache; a listed pass visits them unit by
// unit as pass 1 did, the children in cache, and reads no byte of the states pass 1 decided (a
// full pass reads all 15.8 billion). A listed pass is a full pass that skips the states known when
// the lists were made: those cannot become unknown again (values only go from unknown to proven),
// so it visits the same states in the same order, with the same outcome (the same stats on one
// thread). Lists made earlier still serve: the states decided since are skipped at their visit.

/** The P1 rank of P2's placement in the states of a group, for offsets that only grow (its
 *  unknown states in index order): colex unranking among the cells P1 leaves free, where a
 *  level's position only moves up while the levels above keep theirs, so most offsets cost a
 *  compare per level (unrankP2 searches every level from the top: 2x the listing's time). */
template <class B>
class RisingPlacements {
 public:
  RisingPlacements(const BitboardEngine<B>& e, B a) : e_(e), k_(e.k) {
    int t = 0;
    for (B x = a; any(x); x = clearLowest(x), t++) freeBelow_[t] = lowest(x) - t;
  }
  /** rankP1 of P2's placement at offset r (r at least the last one's). */
  uint64_t p2Rank(uint64_t r) {
    const auto& C = e_.C.c;
    bool same = started_;
    uint64_t rest = r;
    for (int i = k_; i >= 2; i--) {
      int c = same ? p_[i] : i - 1;
      while (C[c + 1][i] <= rest) c++;
      same = same && c == p_[i];
      p_[i] = c;
      rest -= C[c][i];
    }
    p_[1] = static_cast<int>(rest);
    started_ = true;
    // Position p among the free cells is cell p + (P1's cells below it); ascending positions
    // give ascending cells, the j-th of which adds C(cell, j) to the rank.
    uint64_t rank = 0;
    int t = 0;
    for (int i = 1; i <= k_; i++) {
      while (t < k_ && freeBelow_[t] <= p_[i]) t++;
      rank += C[p_[i] + t][i];
    }
    return rank;
  }

 private:
  const BitboardEngine<B>& e_;
  const int k_;
  int freeBelow_[kMaxPieces] = {};  // P1's t-th cell - t: free cells below it
  int p_[kMaxPieces + 1] = {};      // the positions among the free cells, by level
  bool started_ = false;
};

/** Per pass unit, the groups holding its states unknown at the listing, ascending (the order its
 *  full listing has them in: groups are numbered by their representative's P1 rank). */
class UnknownLists {
 public:
  /** Whether these are the lists of `table` (of `bytes` bytes). */
  bool of(const uint8_t* table, size_t bytes) const { return table_ != nullptr && table == table_ && bytes == bytes_; }
  const uint32_t* groupsOf(uint32_t unit, size_t& count) const {
    count = static_cast<size_t>(starts_[unit + 1] - starts_[unit]);
    return groups_.data() + starts_[unit];
  }
  /** Bytes the lists hold. */
  uint64_t bytes() const { return groups_.capacity() * sizeof(uint32_t) + starts_.capacity() * sizeof(uint64_t); }

  /** Lists the unknown states of `table` (`bytes` bytes), if they fit in `budget` bytes: returns
   *  how many there are and whether they were listed (if not, none are kept; all 0 when not even
   *  the counters could be allocated). Counted per chunk of
   *  groups, then written per chunk, so the lists come out the same on any number of threads. */
  template <class B>
  ListedUnknown list(ThreadPool& pool, const BitboardEngine<B>& e, const StateSpace& g, const TableParts& parts, const uint8_t* table,
                     size_t bytes, int threads, uint64_t budget) {
    release();
    const uint32_t units = static_cast<uint32_t>(e.p1Placements);
    const uint32_t groups = static_cast<uint32_t>(g.rankOf.size());
    // Chunks of consecutive groups, up to four per thread (any number gives the same lists); their
    // counters take 8 bytes a unit each, more than one chunk's only within an eighth of the budget.
    const uint64_t affordable = budget / 8 / (uint64_t{units} * sizeof(uint64_t));
    const uint32_t chunks = static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>({groups, 4 * static_cast<uint64_t>(std::max(1, threads)), affordable})));
    const auto chunkGroups = [&](uint32_t c, uint32_t& from, uint32_t& to) {
      from = static_cast<uint32_t>(uint64_t{groups} * c / chunks);
      to = static_cast<uint32_t>(uint64_t{groups} * (c + 1) / chunks);
    };
    // Per chunk and P2 placement (by its P1 rank, the unit passOrder[u] names): first the count
    // of its unknown states, then where the next one goes.
    std::vector<uint64_t> at;
    try {
      at.assign(static_cast<size_t>(chunks) * units, 0);
    } catch (const std::bad_alloc&) {  // not even the counters: nothing counted, nothing listed
      return {0, 0, false};
    }
    forEachUnit(pool, chunks, threads, [](int) { return ChunkWorker{}; }, [&](ChunkWorker&, uint32_t c, int) {
      uint32_t from, to;
      chunkGroups(c, from, to);
      uint64_t* counts = at.data() + static_cast<size_t>(c) * units;
      for (uint32_t group = from; group < to; group++) forEachUnknown(e, g, parts, group, [&](uint64_t p2Rank) { counts[p2Rank]++; });
    });
    uint64_t total = 0;
    for (uint32_t u = 0; u < units; u++)
      for (uint32_t c = 0; c < chunks; c++) total += std::exchange(at[static_cast<size_t>(c) * units + g.passOrder[u]], total);
    const uint64_t need = total * sizeof(uint32_t) + (uint64_t{units} + 1) * sizeof(uint64_t);
    if (need > budget) return {total, need, false};
    try {
      groups_.resize(total);
      starts_.resize(uint64_t{units} + 1);
    } catch (const std::bad_alloc&) {  // the lists save time, never memory
      release();
      return {total, need, false};
    }
    for (uint32_t u = 0; u < units; u++) starts_[u] = at[g.passOrder[u]];  // chunk 0's place is the unit's start
    starts_[units] = total;
    forEachUnit(pool, chunks, threads, [](int) { return ChunkWorker{}; }, [&](ChunkWorker&, uint32_t c, int) {
      uint32_t from, to;
      chunkGroups(c, from, to);
      uint64_t* next = at.data() + static_cast<size_t>(c) * units;
      for (uint32_t group = from; group < to; group++) forEachUnknown(e, g, parts, group, [&](uint64_t p2Rank) { groups_[next[p2Rank]++] = group; });
    });
    table_ = table;
    bytes_ = bytes;
    return {total, need, true};
  }

  void release() {
    std::vector<uint32_t>().swap(groups_);
    std::vector<uint64_t>().swap(starts_);
    table_ = nullptr;
    bytes_ = 0;
  }

  std::mutex mutex;  // one call at a time uses the lists

 private:
  struct ChunkWorker {
    KernelStats stats{};
    void endSweep() {}
  };

  /** f(p2Rank) for each unknown state of `group`, in index order: rankP1 of its P2 placement. */
  template <class B, class F>
  static void forEachUnknown(const BitboardEngine<B>& e, const StateSpace& g, const TableParts& parts, uint32_t group, F f) {
    RisingPlacements<B> placements(e, e.unrankP1(g.rankOf[group]));
    const uint64_t first = static_cast<uint64_t>(group) * e.p2Placements;
    const uint64_t end = first + e.p2Placements;
    uint64_t i = first;
    for (; i < end && (i & 31) != 0; i++)
      if (parts.load(i) == kUnknown) f(placements.p2Rank(i - first));
    // 32 states a word: its unknown ones (2-bit fields 0) found with a mask (1 in 42 states is
    // unknown after pass 1 of 7x7/4: most words hold one, so skipping known words alone is slow).
    for (; i + 32 <= end; i += 32) {
      const uint64_t x = loadEightBytes(parts.byte(i));
      for (uint64_t unknown = ~(x | (x >> 1)) & 0x5555555555555555ull; unknown != 0; unknown &= unknown - 1) {
        f(placements.p2Rank(i + static_cast<uint64_t>(__builtin_ctzll(unknown) >> 1) - first));
      }
    }
    for (; i < end; i++)
      if (parts.load(i) == kUnknown) f(placements.p2Rank(i - first));
  }

  const uint8_t* table_ = nullptr;
  size_t bytes_ = 0;
  std::vector<uint64_t> starts_;  // per unit, where its groups start in groups_ (units + 1)
  std::vector<uint32_t> groups_;
};
