// The visits of the solver's init and passes (core's solver-space/pass-worker.ts): one worker per
// thread and kernel call, over the table of the call: TableParts (the whole table) or a BandTable
// (one band, with an outbox for what it decides about states held elsewhere).
// Included after state_graph.inl, band_table.inl and outbox.inl.

/** A stored state of a pass unit: its index, and P1's pieces (the unit is P2's placement). */
template <class B>
struct UnitState {
  uint64_t index;
  B p1;
};

/** What the visits of an open pass unit's states need besides: P2's placement, the children's
 *  group, each cell's bit among its free cells (StateGraph::childCells) and the parents' groups
 *  (StateGraph::unitParentGroups) (OpenUnit, open_unit.hpp). */
template <class B>
struct UnitContext {
  B b{};
  ChildGroup<B> cg{};
  B childCells[kMaxCells];
  ParentGroup<B> parentGroups[kMaxPieces * kMaxCells];
};

/** A pass unit open to the threads of its call; one per thread. */
template <class B>
using PassUnit = OpenUnit<UnitState<B>, UnitContext<B>>;

template <class B, class Table>
struct PassWorker {
  const BitboardEngine<B>& engine;  // copied into a local by the hot methods (see StateGraph)
  const StateSpace& g;
  const Table& table;
  Outbox* outbox;  // a BandTable's messages (nullptr for TableParts)
  StateGraph<B> graph;
  KernelStats stats{};
  std::vector<uint8_t> moves;
  std::vector<uint64_t> childIndex;
  std::vector<UnitState<B>> unitStates;  // the states of the current pass unit
  std::vector<uint64_t> parentIndex;     // a lost state's parents (StateGraph::forEachParentIndex)
  std::vector<StatePlace> parentPlaces;  // a band's: where they lie
  /** The call's open units, one per thread (nullptr: a call whose units are not pass units),
   *  and this worker's thread. */
  PassUnit<B>* openUnits = nullptr;
  int thread = 0, threads = 1;

  PassWorker(const BitboardEngine<B>& engine, const StateSpace& groups, const Table& t, Outbox* out = nullptr)
      : engine(engine),
        g(groups),
        table(t),
        outbox(out),
        graph(engine, groups),
        moves(2 * static_cast<size_t>(engine.n) * engine.k + 2),
        childIndex(moves.size() / 2),
        parentIndex(graph.maxParents()),
        parentPlaces(Table::kSends ? graph.maxParents() : 0) {}

  /** The worker of thread t of n, in a call of pass units (passUnit) open to helpers. */
  PassWorker&& sharing(PassUnit<B>* units, int t, int n) && {
    openUnits = units;
    thread = t;
    threads = n;
    return std::move(*this);
  }

  /** Illegal and terminal states, and wins in one move: P1 fills its goal with a legal move.
   *  Knowing those before the first pass lets it prove most of the game in one sweep. */
  void init(uint64_t index, B a, B b) {
    const BitboardEngine<B>& e = engine;
    if (e.isIllegal(a, b, 0)) {
      if (table.prove(index, kIllegal)) stats.illegal++;
    } else if (e.hasWon(1, a, b)) {
      if (table.prove(index, kLoss)) stats.terminal++;
    } else if (popcount(e.goal[0] & ~(a | b)) == 1) {
      // A move fills P1's goal only if exactly one goal cell is empty (it lands there): most
      // states need no move generation at all.
      int count = e.generate(a, a | b, moves.data());
      for (int i = 0; i < count; i++) {
        B next = a ^ cellBit<B>(moves[2 * i]) ^ cellBit<B>(moves[2 * i + 1]);
        if (e.hasWon(0, next, b) && !e.isIllegal(next, b, 1)) {
          if (table.prove(index, kWin)) stats.wins++;
          return;
        }
      }
    }
  }

  /** At most how many sets initSets lists. */
  static constexpr int kMaxInitSets = kMaxPieces + 3;

  /** Sets of cells P2 must fill for init to decide a state of P1 placement `a`: every state init
   *  decides has P2 on all the cells of one of them (each free of a, at most k cells). Returns how
   *  many, or -1 where they bound nothing: a 6-piece placement a that blocks P2's start area
   *  makes most of its group illegal. A state may fill two sets. */
  int initSets(B a, B* out) const {
    const BitboardEngine<B>& e = engine;
    int sets = 0;
    const auto add = [&](B cells) {
      if (popcount(cells) <= e.k) out[sets++] = cells;
    };
    // P1's goal filled (illegal: P1 to move has won), or all but the one cell a move fills.
    const B goalLeft = e.goal[0] & ~a;
    add(goalLeft);
    for (B x = goalLeft; any(x); x = clearLowest(x)) add(goalLeft & ~cellBit<B>(lowest(x)));
    add(e.goal[1] & ~a);  // P2's goal filled: P2 has won
    if (e.k == 6) {
      // Blocked start areas (BitboardEngine::blockIllegal): P2 blocking P1's, P1 blocking P2's.
      if (!any(e.blockCells[0] & a) && !test(a, e.blockTip[0])) add(e.blockCells[0]);
      if (!any(e.blockCells[1] & ~a) && !test(a, e.blockTip[1])) return -1;
    }
    return sets;
  }

  static constexpr uint64_t kNoBlocker = ~uint64_t{0};

  /** The child group of P2 placement b, its base as the table addresses children. */
  ChildGroup<B> childGroupOf(B b) const {
    ChildGroup<B> cg = graph.childGroup(b);
    cg.base = table.childBase(cg.base);
    return cg;
  }

  /** Visits stored state `index` = (a, b) if still unknown, as a sparse pass does (late passes,
   *  revisits): the children's group is rarely in cache, so all their indices are computed and
   *  prefetched first, and the misses overlap. Returns the child still unknown it stopped at
   *  (see waitForRevisit), else kNoBlocker. */
  uint64_t pass(uint64_t index, B a, B b, const ChildGroup<B>& cg) {
    StatePlace place{};
    if (isDecided(index, a, b, place)) return kNoBlocker;
    const int count = engine.generate(a, a | b, moves.data());
    graph.childIndices(a, count, cg, moves.data(), childIndex.data(), table);
    return visitChildren(index, place, a, b, count, childIndex.data());
  }

  /** The visit of a pass unit's state (a, unit.b), if still unknown: the children's group is in
   *  cache, so each child is ranked (through the unit's childCells) as its move is generated,
   *  and only once the ones before it were won. K: withPieces. */
  template <int K>
  uint64_t passInUnit(uint64_t index, B a, const UnitContext<B>& unit) {
    StatePlace place{};
    if (isDecided(index, a, unit.b, place)) return kNoBlocker;
    const B freeA = StateGraph<B>::childP2In(a, unit.childCells);
    const B occ = a | unit.b;
    ChildScan scan;
    for (B pieces = a; any(pieces); pieces = clearLowest(pieces)) {
      // The piece's moves share the other pieces' bits among the children's free cells.
      const int from = lowest(pieces);
      const B others = freeA ^ unit.childCells[from];
      if (!engine.forEachMoveFrom(from, occ, [&](int to) { return scan.read(table, graph.template childIndexIn<K>(others, unit.cg, unit.childCells, to)); })) break;
    }
    return conclude<K>(index, place, a, unit.b, scan, unit.parentGroups);
  }

  /** The state needs no visit: it is known, or (a band's state held elsewhere) found by init.
   *  `place`: a band's, where the state lies. */
  bool isDecided(uint64_t index, B a, B b, [[maybe_unused]] StatePlace& place) const {
    if constexpr (Table::kSends) {
      // A band visits states held elsewhere too, without their values: init's are found again
      // (illegal, terminal; a win in one finds its lost child), the others decided again.
      place = table.placeOf(index);
      if (table.holds(place)) return table.loadLocal(place.local) != kUnknown;
      const BitboardEngine<B>& e = engine;
      return e.isIllegal(a, b, 0) || e.hasWon(1, a, b);
    } else {
      return table.load(index) != kUnknown;
    }
  }

  /** What a visit's children tell, read one by one: read() is false once no more are needed.
   *  A state with a lost child is already won: every loss a pass proves is propagated to all its
   *  parents at once (or is about to be, by the thread that proved it; or sent to them), and the
   *  parents of init's terminal losses are wins in one, found by init too. What is left to find
   *  out is whether every legal child is won: the first unknown child ends the visit (a band,
   *  which looks for a lost child past it, reads on). */
  struct ChildScan {
    int count = 0;
    uint64_t unknown = kNoBlocker;  // the first unknown child
    bool lostChild = false;
    bool read(const Table& t, uint64_t child) {
      count++;
      const int v = t.loadChild(child);
      if (v & 2) return true;  // won or illegal (kWin, kIllegal): read on, as most children do
      if (v == kLoss) {
        lostChild = true;
        return false;
      }
      if (unknown == kNoBlocker) unknown = child;
      return t.seeksLoss();
    }
  };

  /** The rest of a sparse visit, once its `count` children's indices are in `children`. */
  uint64_t visitChildren(uint64_t index, const StatePlace& place, B a, B b, int count, const uint64_t* children) {
    ChildScan scan;
    for (int i = 0; i < count && scan.read(table, children[i]); i++) {
    }
    return conclude(index, place, a, b, scan);
  }

  /** A visit's end, from what its children told: the state won, lost (and its parents won), or
   *  waiting for the unknown child returned. K: withPieces (0: any k). `unitGroups`: the
   *  unitParentGroups of b, for a state of a pass unit. */
  template <int K = 0>
  uint64_t conclude(uint64_t index, const StatePlace& place, B a, B b, const ChildScan& scan, const ParentGroup<B>* unitGroups = nullptr) {
    if (scan.count == 0) {
      stats.moveless++;
      return kNoBlocker;
    }
    if (scan.lostChild) {
      if (decide(index, place, kWin) == Decision::kChanged) stats.wins++;
      return kNoBlocker;
    }
    if (scan.unknown != kNoBlocker) return scan.unknown;
    const Decision loss = decide(index, place, kLoss);
    if (loss == Decision::kKnown) return kNoBlocker;  // another thread proved it, and tells the parents
    if (loss == Decision::kChanged) stats.losses++;
    // Immediate propagation: every parent (a, b^, P2 to move), b^ -> b by a P2 move
    // (moves are reversible), is won; stored as (rot b^, rot a).
    // The parents lie in other groups all over the table: every index is computed and its
    // byte prefetched before any is read, so the cache misses overlap instead of queueing.
    uint64_t* const out = parentIndex.data();
    const auto listParents = [&](auto&& put) {
      return unitGroups ? graph.template forEachParentIndexIn<K>(a, b, unitGroups, put) : graph.template forEachParentIndex<K>(a, b, put);
    };
    if constexpr (Table::kSends) {
      const int parents = listParents([out](int i, uint64_t parent) { out[i] = parent; });
      // A band sends the parents it does not hold their win, unless the band of their units
      // finds it (leavesWinToUnits). Each parent's place is found once.
      const int32_t unitsBand = table.laterUnitsBand(place);
      for (int i = 0; i < parents; i++) {
        parentPlaces[i] = table.placeOf(out[i]);
        if (table.holds(parentPlaces[i])) __builtin_prefetch(table.localByte(parentPlaces[i].local), 1);
      }
      for (int i = 0; i < parents; i++) {
        const StatePlace& p = parentPlaces[i];
        if (table.holds(p)) {
          if (table.loadLocal(p.local) == kUnknown && table.proveLocal(p.local, kWin)) stats.wins++;
        } else if (!table.leavesWinToUnits(unitsBand, p)) {
          outbox->sendValue(p, kWin);
        }
      }
    } else {
      const Table& t = table;
      const int parents = listParents([out, &t](int i, uint64_t parent) {
        out[i] = parent;
        __builtin_prefetch(t.byte(parent), 1);
      });
      for (int i = 0; i < parents; i++)
        if (t.load(out[i]) == kUnknown && t.prove(out[i], kWin)) stats.wins++;
    }
    return kNoBlocker;
  }

  /** What decide() did: the table had the value already, took it, or it was sent (a band not
   *  holding the state; stats count the states this table took, the output the messages). */
  enum class Decision { kKnown, kChanged, kSent };
  Decision decide(uint64_t index, const StatePlace& place, int value) {
    if constexpr (Table::kSends) {
      if (!table.holds(place)) {
        outbox->sendValue(place, value);
        return Decision::kSent;
      }
      return table.proveLocal(place.local, value) ? Decision::kChanged : Decision::kKnown;
    }
    return table.prove(index, value) ? Decision::kChanged : Decision::kKnown;
  }

  // Sparse visits ahead. A sparse visit's children lie in the group of its P2 placement, rarely in
  // cache, and so do a loss's parents: visited one by one, each state waits for its misses before
  // the next one's are asked for. A sparse pass therefore prepares kSparseAhead states ahead
  // (moves generated, children ranked and prefetched) and visits each when the ring is full, in
  // the order found: every value is read at the visit, at the same point of the pass as without
  // the ring, so the visits decide exactly what they did (the same stats on one thread).
  static constexpr int kSparseAhead = 8;
  struct PreparedVisit {
    uint64_t index;
    B a, b;
    int count;         // its children, in preparedChildren; -1: waiting on `waitsOn` (SparseMemo)
    uint64_t waitsOn;  // the child its last visit stopped at, found unknown when prepared
  };
  PreparedVisit prepared[kSparseAhead];
  std::vector<uint64_t> preparedChildren = std::vector<uint64_t>(kSparseAhead * childIndex.size());
  int preparedFirst = 0, preparedCount = 0;

  /** Stored state `index` = (a, b), found unknown by a sparse scan, to be visited once
   *  kSparseAhead more are prepared (or at visitPrepared). */
  void prepareSparseVisit(uint64_t index, B a, B b, const ChildGroup<B>& cg) {
    if (preparedCount == kSparseAhead) visitOldestPrepared();
    const int slot = (preparedFirst + preparedCount++) % kSparseAhead;
    const int count = engine.generate(a, a | b, moves.data());
    graph.childIndices(a, count, cg, moves.data(), &preparedChildren[slot * childIndex.size()], table);
    prepared[slot] = {index, a, b, count, kNoBlocker};
  }

  /** A state the memo says has no moves, or (`waitsOn`) stopped its last visit at `waitsOn`, still
   *  unknown: visited in its turn as the others, without its moves where that child stays unknown. */
  void prepareRememberedVisit(uint64_t index, B a, B b, uint64_t waitsOn) {
    if (preparedCount == kSparseAhead) visitOldestPrepared();
    const int slot = (preparedFirst + preparedCount++) % kSparseAhead;
    prepared[slot] = {index, a, b, waitsOn == SparseMemo::kNoMoves ? 0 : -1, waitsOn};
  }

  /** Visits every prepared state, in the order prepared (before a unit ends: revisits). */
  void visitPrepared() {
    while (preparedCount > 0) visitOldestPrepared();
  }

  void visitOldestPrepared() {
    const int slot = preparedFirst;
    const PreparedVisit& p = prepared[slot];
    preparedFirst = (preparedFirst + 1) % kSparseAhead;
    preparedCount--;
    StatePlace place{};
    if (isDecided(p.index, p.a, p.b, place)) return;  // proven since it was prepared
    uint64_t blocker;
    if (p.count >= 0) {
      blocker = visitChildren(p.index, place, p.a, p.b, p.count, &preparedChildren[slot * childIndex.size()]);
    } else if (table.loadChild(p.waitsOn) == kUnknown) {
      blocker = p.waitsOn;  // the visit would stop there again (SparseMemo)
    } else {
      blocker = pass(p.index, p.a, p.b, childGroupOf(p.b));  // proven since it was prepared: visited now
    }
    if (memo) {
      if (blocker != kNoBlocker) memoFresh.push_back({blocker, static_cast<uint32_t>(p.index - memoFirst)});
      else if (p.count == 0) memoFresh.push_back({SparseMemo::kNoMoves, static_cast<uint32_t>(p.index - memoFirst)});
    }
    waitForRevisit(p.index, blocker, p.a, p.b);
  }

  // A sparse pass's memo (SparseMemo; nullptr: none): the states of the current group its visits
  // leave unknown, and the index of the group's first state.
  SparseMemo* memo = nullptr;
  std::vector<MemoEntry> memoFresh;
  uint64_t memoFirst = 0;

  /** The worker keeps what its sparse visits leave unknown in `m` (nullptr: nowhere). */
  PassWorker&& remembering(SparseMemo* m) && {
    memo = m;
    return std::move(*this);
  }

  // Revisits. A visit that stops at an unknown child is usually waiting for a state that the
  // next few units of the sweep prove (in a full pass: the proof order puts a P2 placement
  // shortly before the ones a sideways move away, which share its distance to the goal). Such
  // states are visited once more kRevisitLag units (P2 placements, or groups in a sparse pass)
  // later in the same pass: 7x7/3 then proves 99.8% of its states in the first pass instead of
  // 94.5%, in 7 passes instead of 11.
  struct Waiting {
    uint64_t index, blocker;  // the state, and the child its visit stopped at
    B a, b;
  };
  std::vector<std::vector<Waiting>> waiting = std::vector<std::vector<Waiting>>(kRevisitLag + 1);
  size_t unitsDone = 0;  // units of this kernel call done so far

  /** A thread's waiting states kept from one band call to its next (BandPhase::UnitsKeep): so a
   *  sweep may span calls of a few units each (the slices of a shared step) and still revisit a
   *  state kRevisitLag units later, not at the end of its own call. */
  struct KeptSweep {
    std::vector<std::vector<Waiting>> waiting = std::vector<std::vector<Waiting>>(kRevisitLag + 1);
    size_t unitsDone = 0;
  };
  KeptSweep* kept = nullptr;  // set: the sweep goes on from `kept` and ends there (endSweep)

  /** The worker goes on with the sweep `k` kept. */
  PassWorker&& keeping(KeptSweep* k) && {
    kept = k;
    std::swap(waiting, k->waiting);
    unitsDone = k->unitsDone;
    return std::move(*this);
  }

  /** The states a sweep kept, visited again, oldest first: the end of that sweep. */
  void revisitKept(KeptSweep& k) {
    revisitSweep(k.waiting, k.unitsDone);
    k.unitsDone = 0;
  }

  /** The end of a sweep of `units` units: every state still waiting in `lists`, oldest first. */
  void revisitSweep(std::vector<std::vector<Waiting>>& lists, size_t units) {
    for (size_t u = units > kRevisitLag ? units - kRevisitLag : 0; u < units; u++) revisit(lists[u % (kRevisitLag + 1)]);
  }

  void waitForRevisit(uint64_t index, uint64_t blocker, B a, B b) {
    if (blocker != kNoBlocker) waiting[unitsDone % (kRevisitLag + 1)].push_back({index, blocker, a, b});
  }

  /** A unit is done: the states that waited kRevisitLag units ago are visited again. */
  void endUnit() {
    unitsDone++;
    if (unitsDone > kRevisitLag) revisit(waiting[unitsDone % (kRevisitLag + 1)]);
  }

  /** Visits the states i in [from, to) of unit u (its visit order), a few prefetched ahead. K:
   *  withPieces. */
  template <int K>
  void visitUnitStates(const PassUnit<B>& u, size_t from, size_t to) {
    constexpr size_t kAhead = 16;
    const B b = u.context.b;
    for (size_t i = from; i < std::min(to, from + kAhead); i++) table.prefetch(u.at(i).index);
    for (size_t i = from; i < to; i++) {
      if (i + kAhead < to) table.prefetch(u.at(i + kAhead).index);
      const UnitState<B>& s = u.at(i);
      waitForRevisit(s.index, passInUnit<K>(s.index, s.p1, u.context), s.p1, b);
    }
  }

  /** visitUnitStates compiled for the variant's piece count (withPieces), chosen per chunk. */
  void visitUnitRange(const PassUnit<B>& u, size_t from, size_t to) {
    withPieces(engine, [&](auto pieces) { visitUnitStates<decltype(pieces)::value>(u, from, to); });
  }

  /** Takes chunks of the states of unit u until none is left (its owner, or a helper). */
  bool visitUnitChunks(PassUnit<B>& u) {
    return u.takeChunks([&](size_t from, size_t to) { visitUnitRange(u, from, to); });
  }

  /** The end of the kernel call: every state still waiting is visited again, oldest first; a
   *  band's messages are then sorted, on this thread (Outbox::sort). */
  void endSweep() {
    // No unit left to take: the others' units still open are helped with first. What it visits
    // of one counts as a unit of its own for the revisits.
    if (openUnits) {
      helpWithOpenUnits(openUnits, threads, thread, [&](const PassUnit<B>& u, size_t from, size_t to) { visitUnitRange(u, from, to); },
                        [&](const PassUnit<B>&) { endUnit(); });
    }
    if (kept) {
      // The sweep goes on in the next call: its waiting states go back where they came from.
      std::swap(waiting, kept->waiting);
      kept->unitsDone = unitsDone;
    } else {
      revisitSweep(waiting, unitsDone);
    }
    unitsDone = 0;
    if constexpr (Table::kSends) outbox->sort();
  }

  /** Most revisits find the child that stopped the first visit still unknown: the visit would
   *  stop there again (the children before it were won, and values never change back), so it is
   *  skipped, for two loads. */
  void revisit(std::vector<Waiting>& states) {
    constexpr size_t kAhead = 16;
    ChildGroup<B> cg;
    bool cgFor = false;  // cg is the child group of states[i - 1].b
    for (size_t i = 0; i < states.size(); i++) {
      if (i + kAhead < states.size()) {
        table.prefetch(states[i + kAhead].index);
        __builtin_prefetch(table.childByte(states[i + kAhead].blocker));
      }
      const Waiting& s = states[i];
      if (cgFor && !(s.b == states[i - 1].b)) cgFor = false;
      if (table.loadChild(s.blocker) == kUnknown) continue;
      if (!cgFor) {
        cg = childGroupOf(s.b);
        cgFor = true;
      }
      pass(s.index, s.a, s.b, cg);
    }
    states.clear();
  }
};
