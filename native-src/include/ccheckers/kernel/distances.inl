// Distances to the end of the game over a solved table (core's solver-space/distances.ts), layer by
// layer from the ends: one worker per thread and kernel call. Included after state_graph.inl.

template <class B>
struct DistanceWorker {
  const BitboardEngine<B>& engine;  // copied into a local by the methods (see StateGraph)
  const StateSpace& g;
  const TableParts& table;
  StateGraph<B> graph;
  KernelStats stats{};
  std::vector<uint8_t> moves;

  DistanceWorker(const BitboardEngine<B>& engine, const StateSpace& groups, const TableParts& t)
      : engine(engine), g(groups), table(t), graph(engine, groups), moves(2 * static_cast<size_t>(engine.n) * engine.k + 2) {}

  void endSweep() {}

  /** Distance 0 for a lost state without a legal move (terminal ones included), the mark of a lost
   *  state without a distance for the other lost states (see kLostWithoutDistance). */
  void distanceInit(uint64_t index, B a, B b, uint8_t* distances) {
    if (table.load(index) != kLoss) return;
    const BitboardEngine<B>& e = engine;
    if (!e.hasWon(1, a, b) && hasLegalChild(a, b)) {
      distances[index] = kLostWithoutDistance;
      return;
    }
    distances[index] = 0;
    stats.losses++;
  }

  /** Whether (a, b) has a move to a state that is not illegal. A stored state is illegal exactly
   *  where isIllegal says so (the solver's init proves nothing else illegal), so each child's
   *  position answers without its table byte: no cache miss per lost state. */
  bool hasLegalChild(B a, B b) {
    const BitboardEngine<B>& e = engine;
    const int count = e.generate(a, a | b, moves.data());
    for (int i = 0; i < count; i++)
      if (!e.isIllegal(a ^ cellBit<B>(moves[2 * i]) ^ cellBit<B>(moves[2 * i + 1]), b, 1)) return true;
    return false;
  }

  /** (a, b), of value `value`, is at distance `depth`: gives depth + 1 to each parent it decides
   *  (mirror twins included: same value, same distance). */
  void pushDistance(B a, B b, int value, int depth, uint8_t* distances) {
    // The parents lie all over both tables: every index first, each prefetched, so that the
    // cache misses overlap. A lost state's parents are won (or illegal, which only their value
    // tells); a won state's lost parents are known by their distance byte alone.
    const ParentList<B> parents = graph.parentsOf(a, b);
    for (const ParentState<B>& p : parents) {
      __builtin_prefetch(&distances[p.index], 1);
      if (value == kLoss) __builtin_prefetch(table.byte(p.index));
    }
    for (const ParentState<B>& p : parents) pushDistanceTo(p.index, p.a, p.b, value, depth, distances);
  }

  /** The parent is stored state `parent`, position (a, b). */
  void pushDistanceTo(uint64_t parent, B a, B b, int value, int depth, uint8_t* distances) {
    const int d = loadDistance(distances, parent);
    if (value == kLoss) {
      if (d == kNoDistance && table.load(parent) == kWin && replaceDistance(distances, parent, kNoDistance, depth + 1)) stats.wins++;
    } else if (isLostWithoutDistance(d) && d != lostCheckedMark(depth)) {
      // Within a layer the answer cannot change (the won children's distances are all laid
      // already), so a parent found undecided is marked and not checked again this layer.
      if (!childrenWithin(a, b, depth, distances)) {
        replaceDistance(distances, parent, d, lostCheckedMark(depth));
      } else if (setLostDistance(parent, depth + 1, distances)) {
        stats.losses++;
      }
    }
  }

  /** Gives a lost state its distance whatever mark it holds (another thread may change the mark
   *  meanwhile); true when this call gave it. */
  bool setLostDistance(uint64_t index, int distance, uint8_t* distances) {
    int d = loadDistance(distances, index);
    while (isLostWithoutDistance(d)) {
      if (replaceDistance(distances, index, d, distance)) return true;
      d = loadDistance(distances, index);
    }
    return false;
  }

  /** Whether every legal child of (a, b) has a distance of at most `depth`. The children lie in
   *  the group of the state being pushed from, which is in cache. Most calls find a child still
   *  without one (a lost state is asked once per won child that gets a distance before its last
   *  one), so each child is ranked only when the ones before it passed. */
  bool childrenWithin(B a, B b, int depth, const uint8_t* distances) {
    const BitboardEngine<B>& e = engine;
    const int count = e.generate(a, a | b, moves.data());
    const ChildGroup<B> cg = graph.childGroup(b);
    const B mappedA = graph.childP2(a, cg);
    for (int i = 0; i < count; i++) {
      const uint64_t child = graph.childIndexOf(mappedA, cg, moves[2 * i], moves[2 * i + 1]);
      if (loadDistance(distances, child) > depth && table.load(child) != kIllegal) return false;
    }
    return true;
  }
};
