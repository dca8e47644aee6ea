// The solver's phases (core's SolverKernel: init, pass, sparsePass, distanceInit, distanceLayer):
// one function per phase, each a visit of one work unit (a group, or a P2 placement of the proof
// order), run over a range of units by the one loop they share (forEachUnit: the threads, their
// workers, and the errors a thread throws). Included after pass_worker.inl and distances.inl.

/**
 * Units [0, units) taken in turn by `threads` threads of `pool` (the calling thread alone for 1),
 * each with its own worker, made by makeWorker(t) in thread t; visit(worker, i, t) does unit i on
 * thread t, and worker.endSweep() ends the thread's sweep. Returns the workers' stats summed.
 *
 * An exception escaping a thread's body would call std::terminate and take Node down (a bad_alloc
 * in one worker's buffers): each thread keeps its own, the others stop taking units, and the
 * first is rethrown after every thread is done, for the binding to turn into a JS error.
 */
template <class MakeWorker, class Visit>
KernelStats forEachUnit(ThreadPool& pool, uint32_t units, int threads, MakeWorker makeWorker, Visit visit) {
  threads = std::max(1, threads);
  std::atomic<uint32_t> taken{0};
  std::vector<KernelStats> results(threads);
  std::vector<std::exception_ptr> failures(threads);
  pool.run(threads, [&](int t) {
    try {
      auto w = makeWorker(t);
      for (uint32_t i; (i = taken.fetch_add(1)) < units;) visit(w, i, t);
      w.endSweep();
      results[t] = w.stats;
    } catch (...) {
      failures[t] = std::current_exception();
      taken.store(units);  // the others stop taking units
    }
  });
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
  KernelStats total{};
  for (const KernelStats& s : results) {
    total.wins += s.wins;
    total.losses += s.losses;
    total.illegal += s.illegal;
    total.terminal += s.terminal;
    total.moveless += s.moveless;
  }
  return total;
}

/** Init of group `group`: the states init can decide (illegal, terminal, won in one). Only those
 *  with P2 on one of a few sets of cells can be (PassWorker::initSets): the P2 placements holding
 *  each set are visited, a state holding two twice (init decides it the same way again, and
 *  counts it once); on 7x7/4, 1,811 of a group's 148,995 states on average (counted from the goal
 *  cells P1 holds). A group those sets do not bound is visited whole, in index order. */
template <class B, class Table>
void initGroup(PassWorker<B, Table>& w, uint32_t group) {
  const BitboardEngine<B>& e = w.engine;
  const B a = e.unrankP1(w.g.rankOf[group]);
  const uint64_t first = static_cast<uint64_t>(group) * e.p2Placements;
  B sets[PassWorker<B, Table>::kMaxInitSets];
  const int count = w.initSets(a, sets);
  if (count < 0) {
    FreePlacements<B> p2(e, a);
    uint64_t index = first;
    do {
      w.init(index++, a, p2.placement());
    } while (p2.next());
    return;
  }
  for (int s = 0; s < count; s++) {
    FreePlacements<B> rest(e, a | sets[s], e.k - popcount(sets[s]));
    do {
      const B b = sets[s] | rest.placement();
      w.init(first + e.rankP2(a, b), a, b);
    } while (rest.next());
  }
}

/** Pass unit `unit`, its states listed by listStates(b) into w.unitStates (returns how many).
 *  Inlined into each caller, with its listing (passUnit is pass 1's hottest loop). */
template <class B, class Table, class ListStates>
CCK_ALWAYS_INLINE void visitUnit(PassWorker<B, Table>& w, uint32_t unit, int t, int threads, ListStates listStates) {
  // Marked first (a thread done with its units waits for a unit being listed, and helps when it
  // opens): closed again, and its helpers waited for, however this ends (OpenUnit).
  PassUnit<B> alone;
  PassUnit<B>& u = w.openUnits ? w.openUnits[t] : alone;
  typename PassUnit<B>::Listing listing(u);
  const BitboardEngine<B>& e = w.engine;
  const StateSpace& g = w.g;
  const Table& parts = w.table;
  B b = e.unrankP1(g.passOrder[unit]);
  ChildGroup<B> cg = w.graph.childGroup(b);
  if constexpr (Table::kSends) {
    if (!parts.holdsGroup(cg.base / e.p2Placements)) throw std::invalid_argument("band units: a unit whose children the band does not hold");
  }
  cg.base = parts.childBase(cg.base);
  const size_t states = listStates(b);
  // Workers take consecutive units, whose states lie next to each other in every group: worker t
  // starts its list t / threads of the way in (and wraps), so that two workers do not write to
  // the same cache lines at the same time.
  UnitContext<B> context;
  context.b = b;
  context.cg = cg;
  w.graph.childCells(cg, context.childCells);
  w.graph.unitParentGroups(b, context.parentGroups);
  u.open(w.unitStates.data(), states, states * static_cast<size_t>(t) / static_cast<size_t>(std::max(1, threads)), context);
  w.visitUnitChunks(u);
  listing.close();  // the helpers' visits done before the revisits
  w.endUnit();
}

/**
 * Pass unit `unit` of the proof order: every stored state whose P2 placement is that unit.
 * Locality: their children all lie in the one group of rot(P2), a few kilobytes of the table that
 * stay in cache; the states themselves lie one per group, a cache miss each, so they are listed
 * first and prefetched a few states ahead of the one being solved. A band (BandTable) visits the
 * units whose children it holds, all their states, and sends what it decides about those held
 * elsewhere.
 */
template <class B, class Table>
void passUnit(PassWorker<B, Table>& w, uint32_t unit, int t, int threads) {
  // Inlined, as the listing was before visitUnit: GCC left the lambda a call, and pass 1 took 1.09x
  // as long (its first 1% of 7x7/4: 15.11 s against 13.91 s, medians of three in turn).
  visitUnit(w, unit, t, threads, [&w](B b) CCK_ALWAYS_INLINE_LAMBDA {
    const BitboardEngine<B>& e = w.engine;
    const StateSpace& g = w.g;
    FreePlacements<B> p1(e, b);
    // Half of the placements are stored under their mirror image and skipped: every one is written
    // and only the others kept, since a branch on that would be mispredicted half the time.
    // rankP1(a) from the cells in increasing order: a sum of table entries, without pext.
    w.unitStates.resize(e.p2Placements);  // one per placement of a among the cells b leaves free
    size_t states = 0;
    do {
      B a{};
      uint64_t r1 = 0;
      for (int j = 0; j < e.k; j++) {
        a |= cellBit<B>(p1.cell(j));
        r1 += e.C.c[p1.cell(j)][j + 1];
      }
      const uint64_t group = static_cast<uint64_t>(g.groupOfRank[r1]);
      w.unitStates[states] = {group * e.p2Placements + e.rankP2(a, b), a};
      states += g.mirrored[r1] == 0;
    } while (p1.next());
    return states;
  });
}

/**
 * Pass unit `unit` of a listed pass (UnknownLists): the unit's states that were unknown when the
 * lists were made, in the order passUnit lists them (by group), visited as passUnit visits.
 */
template <class B, class Lists>
void listedUnit(PassWorker<B, TableParts>& w, uint32_t unit, int t, int threads, const Lists& lists) {
  visitUnit(w, unit, t, threads, [&](B b) {
    const BitboardEngine<B>& e = w.engine;
    size_t count = 0;
    const uint32_t* groups = lists.groupsOf(unit, count);
    w.unitStates.resize(std::max<size_t>(count, 1));
    for (size_t i = 0; i < count; i++) {
      const B a = e.unrankP1(w.g.rankOf[groups[i]]);
      w.unitStates[i] = {uint64_t{groups[i]} * e.p2Placements + e.rankP2(a, b), a};
    }
    return count;
  });
}


/**
 * Sparse pass over group `group` (late passes, few states left): scans it for unknown states and
 * unranks only those, visited a few states after they are found (prepareSparseVisit: their
 * children's cache misses overlap). With a memo (SparseMemo) that lists every unknown state of
 * the group, only the listed states are read, and those whose last visit stopped at a child
 * still unknown are not prepared: the same states visited in the same order, with the same
 * outcome.
 */
template <class B>
void sparseGroup(PassWorker<B, TableParts>& w, uint32_t group) {
  const BitboardEngine<B>& e = w.engine;
  const TableParts& parts = w.table;
  B a = e.unrankP1(w.g.rankOf[group]);
  uint64_t first = static_cast<uint64_t>(group) * e.p2Placements;
  SparseMemo* const memo = w.memo;
  if (memo) {
    w.memoFresh.clear();
    w.memoFirst = first;
  }
  if (memo && memo->complete(group)) {
    const std::vector<MemoEntry>& listed = memo->entries(group);
    constexpr size_t kAhead = 16;
    for (size_t k = 0; k < listed.size(); k++) {
      if (k + kAhead < listed.size()) {
        const MemoEntry& ahead = listed[k + kAhead];
        parts.prefetch(first + ahead.offset);
        if (ahead.blocker != SparseMemo::kNoMoves) __builtin_prefetch(parts.childByte(ahead.blocker));
      }
      const MemoEntry& m = listed[k];
      const uint64_t i = first + m.offset;
      if (parts.load(i) != kUnknown) continue;
      const B b = e.unrankP2(a, m.offset);
      if (m.blocker == SparseMemo::kNoMoves || parts.loadChild(m.blocker) == kUnknown) {
        w.prepareRememberedVisit(i, a, b, m.blocker);
      } else {
        w.prepareSparseVisit(i, a, b, w.graph.childGroup(b));
      }
    }
    w.visitPrepared();
    memo->endGroup(group, w.memoFresh);
    w.endUnit();
    return;
  }
  for (uint64_t i = first; i < first + e.p2Placements; i++) {
    // 32 states known (no 2-bit field 0) are skipped with one word, else 4 with one byte.
    if ((i & 31) == 0 && i + 32 <= first + e.p2Placements) {
      const uint64_t x = loadEightBytes(parts.byte(i));
      if (((x | (x >> 1)) & 0x5555555555555555ull) == 0x5555555555555555ull) {
        i += 31;
        continue;
      }
    }
    if ((i & 3) == 0 && i + 4 <= first + e.p2Placements) {
      uint8_t byte = __atomic_load_n(parts.byte(i), __ATOMIC_RELAXED);
      if ((byte & 0x03) && (byte & 0x0c) && (byte & 0x30) && (byte & 0xc0)) {
        i += 3;
        continue;
      }
    }
    if (parts.load(i) != kUnknown) continue;
    B b = e.unrankP2(a, i - first);
    w.prepareSparseVisit(i, a, b, w.graph.childGroup(b));
  }
  w.visitPrepared();
  if (memo) memo->endGroup(group, w.memoFresh);
  w.endUnit();
}

/**
 * Band requests (BandPhase::Visit): the stored states messages[from, to) name, whose children the
 * band holds, visited as a sparse pass visits, a few ahead (their own values are mostly held
 * elsewhere).
 */
template <class B>
void visitRequests(PassWorker<B, BandTable>& w, const double* messages, size_t from, size_t to) {
  const BitboardEngine<B>& e = w.engine;
  const BandTable& band = w.table;
  for (size_t i = from; i < to; i++) {
    if (!isMessage(messages[i]) || messageValue(messages[i]) != 0) throw std::invalid_argument("band visit: a message that is not a request");
    const uint64_t index = messageIndex(messages[i]);
    const uint64_t group = band.groupOf(index);
    if (group >= w.g.rankOf.size()) throw std::invalid_argument("band visit: a request outside the state space");
    const B a = e.unrankP1(w.g.rankOf[group]);
    const B b = e.unrankP2(a, index - group * e.p2Placements);
    ChildGroup<B> cg = w.graph.childGroup(b);
    if (!band.holdsGroup(cg.base / e.p2Placements)) throw std::invalid_argument("band visit: a request whose children the band does not hold");
    cg.base = band.childBase(cg.base);
    w.prepareSparseVisit(index, a, b, cg);
  }
  w.visitPrepared();
  w.endUnit();
}

/**
 * Band requests (BandPhase::Requests) of slot `slot`: a request for each unknown state of its
 * group, to the band that holds the state's children (the held band's own included).
 */
template <class B>
void requestsOfSlot(PassWorker<B, BandTable>& w, uint32_t slot) {
  const BitboardEngine<B>& e = w.engine;
  const BandTable& band = w.table;
  const uint64_t group = band.map.groups[slot];
  const B a = e.unrankP1(w.g.rankOf[group]);
  const uint64_t per = e.p2Placements, first = static_cast<uint64_t>(slot) * per;
  for (uint64_t r = 0; r < per; r++) {
    const uint64_t local = first + r;
    // 4 states known (no 2-bit field 0) are skipped with one byte.
    if ((local & 3) == 0 && r + 4 <= per) {
      const uint8_t byte = __atomic_load_n(band.localByte(local), __ATOMIC_RELAXED);
      if ((byte & 0x03) && (byte & 0x0c) && (byte & 0x30) && (byte & 0xc0)) {
        r += 3;
        continue;
      }
    }
    if (band.loadLocal(local) != kUnknown) continue;
    const B b = e.unrankP2(a, r);
    const ChildGroup<B> cg = w.graph.childGroup(b);
    w.outbox->sendRequest(static_cast<uint32_t>(band.map.bandOf[cg.base / per]), group * per + r);
  }
}

/** What a thread of a band apply counts (forEachUnit's worker; applyValues and applyRuns need no
 *  buffers). */
struct ApplyWorker {
  KernelStats stats{};
  void endSweep() {}
};

/** Band values (BandPhase::Apply) messages[from, to), for the held band: set where unknown.
 *  Threads may apply pieces of the same messages at once: all values sent to one state are the
 *  same (every proof is sound), and the table's writes are atomic ORs. */
inline void applyValues(const BandTable& band, const double* messages, size_t from, size_t to, KernelStats& s) {
  const uint64_t states = static_cast<uint64_t>(band.map.slots) * band.per;
  for (size_t i = from; i < to; i++) {
    if (!isMessage(messages[i])) throw std::invalid_argument("band apply: a message that is not a value of the band's states");
    const uint64_t local = messageIndex(messages[i]);
    const int value = messageValue(messages[i]);
    if (value == 0 || local >= states) throw std::invalid_argument("band apply: a message that is not a value of the band's states");
    // Only where unknown: a win sent to a parent that init found terminal or illegal (a visit
    // skips known parents it holds) must not be OR-ed into its value.
    if (band.loadLocal(local) == kUnknown && band.proveLocal(local, value)) (value == kWin ? s.wins : value == kLoss ? s.losses : s.illegal)++;
  }
}

/**
 * Band values coded in runs (BandPhase::Apply from a message file's bytes, applyRuns): every thread
 * decodes all of them, from the same state, and sets those of its own part of the band's states
 * [first, end) (whole bytes of the table) where unknown, with plain writes: no other thread writes
 * there. Decoding is the cheap part (under 1 ns a message); setting them, the numbers decoded on
 * the calling thread and then set with atomic ORs took 7x7/3 in 9 bands 0.63 + 1.04 s for its
 * 311 M values, and this 1.1-1.2 s. Returns the next byte; `decoded` counts the messages.
 */
inline size_t applyRuns(const BandTable& band, const uint8_t* runs, size_t from, size_t count, RunDecoder& decoder, uint64_t first, uint64_t end,
                        KernelStats& s, uint64_t& decoded) {
  const uint64_t states = static_cast<uint64_t>(band.map.slots) * band.per;
  uint64_t changed[4] = {0, 0, 0, 0};  // by value
  uint64_t n = 0;
  const size_t next = decoder.decode(runs, from, count, ~size_t{0}, [&](uint64_t m) {
    const uint64_t local = m >> 2;
    const unsigned value = static_cast<unsigned>(m & 3);
    if (value == 0 || local >= states) throw std::invalid_argument("band apply: a message that is not a value of the band's states");
    n++;
    if (local - first >= end - first) return;  // another thread's part
    uint8_t* byte = band.localByte(local);
    const unsigned shift = static_cast<unsigned>(local & 3) << 1;
    const uint8_t old = *byte;
    // Only where unknown (a win sent to a parent that init found terminal or illegal must not be
    // OR-ed into its value), without a branch: a wrong guess costs more than the write.
    const unsigned unknown = ((old >> shift) & 3) == 0;
    *byte = static_cast<uint8_t>(old | ((value * unknown) << shift));
    changed[value] += unknown;
    if (band.map.changedLines != nullptr && unknown) band.markChangedLine(local);  // the first test alone without a bitmap
  });
  s.wins += changed[kWin];
  s.losses += changed[kLoss];
  s.illegal += changed[kIllegal];
  decoded = n;
  return next;
}

/** Distance init of group `group`: 0 for its lost states without a legal move. */
template <class B>
void distanceInitGroup(DistanceWorker<B>& w, uint32_t group, uint8_t* distances) {
  const BitboardEngine<B>& e = w.engine;
  const B a = e.unrankP1(w.g.rankOf[group]);
  FreePlacements<B> p2(e, a);
  uint64_t index = static_cast<uint64_t>(group) * e.p2Placements;
  do {
    w.distanceInit(index++, a, p2.placement(), distances);
  } while (p2.next());
}

/** The states of group `group` at distance `depth`: found eight bytes at a time (a word without a
 *  byte equal to depth or to the next layer's mark is skipped), then unranked one by one and pushed
 *  to their parents. The next layer's mark (set by the layer before) goes back to
 *  kLostWithoutDistance on the way: no thread sets it during this layer. */
template <class B>
void distanceLayerGroup(DistanceWorker<B>& w, uint32_t group, uint8_t* distances, int depth) {
  const BitboardEngine<B>& e = w.engine;
  const uint64_t first = static_cast<uint64_t>(group) * e.p2Placements, end = first + e.p2Placements;
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  const int staleMark = lostCheckedMark(depth + 1);
  const uint64_t layer = kOnes * static_cast<uint8_t>(depth), stale = kOnes * static_cast<uint8_t>(staleMark);
  bool unranked = false;
  B a{};
  for (uint64_t i = first; i < end; i++) {
    if ((i & 7) == 0 && i + 8 <= end) {
      const uint64_t word = loadEightBytes(&distances[i]), x = word ^ layer, y = word ^ stale;
      if (((((x - kOnes) & ~x) | ((y - kOnes) & ~y)) & kHighs) == 0) {  // no byte equal to either
        i += 7;
        continue;
      }
    }
    const int d = loadDistance(distances, i);
    if (d == staleMark) {
      replaceDistance(distances, i, staleMark, kLostWithoutDistance);
      continue;
    }
    if (d != depth) continue;
    if (!unranked) {
      a = e.unrankP1(w.g.rankOf[group]);
      unranked = true;
    }
    w.pushDistance(a, e.unrankP2(a, i - first), w.table.load(i), depth, distances);
  }
}
