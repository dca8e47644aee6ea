// Children and parents of a stored state (core's solver-space/state-graph.ts): where the children
// of a P2 placement's states lie, their indices, and the list of a state's parents (moves are
// reversible, so the move generator finds them). Included after state_space.inl.
//
// A stored state is (a, b) with P1 = a to move. After P1 moves a -> a', the position (a', b, P2
// to move) is read as its colour swap (rot b, rot a', P1 to move), mirrored when rot b is not its
// group's representative: all children of the states with P2 placement b lie in one group.

/** Where the children of states with P2 placement b live: (rot b, rot a', P1 to move), mirrored
 *  into its group when rot b is not the representative. Same for every a. */
template <class B>
struct ChildGroup {
  B p1{};
  uint64_t base = 0;
  bool mirrored = false;
};

/** A parent (or mirror twin) of a state: its stored index and position. */
template <class B>
struct ParentState {
  uint64_t index;
  B a, b;
};

/** The parents parentsOf() found: valid until its next call. */
template <class B>
struct ParentList {
  const ParentState<B>* states;
  int count;
  const ParentState<B>* begin() const { return states; }
  const ParentState<B>* end() const { return states + count; }
};

template <class B>
class StateGraph {
 public:
  StateGraph(const BitboardEngine<B>& engine, const StateSpace& groups)
      : engine(engine),
        g(groups),
        parentStates(2 * static_cast<size_t>(engine.n) * engine.k + 2),  // a parent and a twin per P2 move
        parentGroups(static_cast<size_t>(engine.n) * engine.n) {}

  ChildGroup<B> childGroup(B b) const {
    const BitboardEngine<B>& e = engine;
    ChildGroup<B> cg;
    B rb = e.rotate(b);
    uint64_t r1 = e.rankP1(rb);
    cg.mirrored = g.mirrored[r1];
    cg.base = static_cast<uint64_t>(g.groupOfRank[r1]) * e.p2Placements;
    cg.p1 = cg.mirrored ? e.mirror(rb) : rb;
    return cg;
  }

  /** a as the children's P2 before the move: rotated, and mirrored with their group. */
  B childP2(B a, const ChildGroup<B>& cg) const {
    const BitboardEngine<B>& e = engine;
    const B ra = e.rotate(a);
    return cg.mirrored ? e.mirror(ra) : ra;
  }

  /** Each cell's bit among the cells free of the children's P1, for the group `cg` of a pass
   *  unit (out[0..n), 0 for the cells of its b): the cell rotated (and mirrored with the group),
   *  then numbered among the free cells. rankP2 compresses the children's P2 onto those cells
   *  (a pext), and a pext of an xor is the xor of the pexts: a child's P2 there is the xor of
   *  its cells' bits (childIndexIn), without a rotate, mirror or pext per state or child (as
   *  core's childFreeRows). */
  void childCells(const ChildGroup<B>& cg, B* out) const {
    const BitboardEngine<B>& e = engine;
    for (int c = 0; c < e.n; c++) {
      const int m = childCellOf(c, cg);
      out[c] = test(cg.p1, m) ? B{} : cellBit<B>(m - popcount(cg.p1 & below<B>(m)));
    }
  }

  /** Cell c of a state as its children in `cg` hold it: rotated, and mirrored with the group. */
  int childCellOf(int c, const ChildGroup<B>& cg) const {
    const int r = engine.n - 1 - c;
    return cg.mirrored ? engine.mirrorMap[r] : r;
  }

  /** P1's placement a among the children's free cells (childCells `cells`), before a move. */
  static B childP2In(B a, const B* cells) {
    B out{};
    for (B x = a; any(x); x = clearLowest(x)) out ^= cells[lowest(x)];
    return out;
  }

  /** childIndexOf through the unit's childCells: freeA = childP2In(a, cells). K: withPieces. */
  template <int K = 0>
  CCK_ALWAYS_INLINE uint64_t childIndexIn(B freeA, const ChildGroup<B>& cg, const B* cells, int from, int to) const {
    return cg.base + engine.template rankSet<K>(freeA ^ cells[from] ^ cells[to]);
  }

  /** Stored index of the child after P1's move from -> to; mappedA = childP2(a, cg). */
  uint64_t childIndexOf(B mappedA, const ChildGroup<B>& cg, int from, int to) const {
    return cg.base + engine.rankP2(cg.p1, mappedA ^ cellBit<B>(childCellOf(from, cg)) ^ cellBit<B>(childCellOf(to, cg)));
  }

  /** out[0..count) for the `moves` of (a, b), whose children live in `cg` (indices as `table`
   *  addresses children: see childBase). Each is prefetched
   *  from `table`: where the children's group is rarely in cache (sparse passes), the misses then
   *  overlap. */
  template <class Table>
  void childIndices(B a, int count, const ChildGroup<B>& cg, const uint8_t* moves, uint64_t* out, const Table& table) const {
    const B mappedA = childP2(a, cg);
    for (int i = 0; i < count; i++) {
      out[i] = childIndexOf(mappedA, cg, moves[2 * i], moves[2 * i + 1]);
      __builtin_prefetch(table.childByte(out[i]));
    }
  }

  /** Every (a, b^, P2 to move) with b^ -> b by a P2 move, stored as (rot b^, rot a) mirrored into
   *  its group; and where that group's placement is its own mirror image, the mirror twin too
   *  (both are stored, with the same value). */
  ParentList<B> parentsOf(B a, B b) {
    const int parents = forEachParent(a, b, [this](int i, uint64_t index, B p1, B p2) { parentStates[i] = {index, p1, p2}; });
    return {parentStates.data(), parents};
  }

  /** The stored indices of the same parents, in out[0..returned): all a pass needs of them.
   *  K: withPieces. */
  template <int K = 0>
  int parentIndices(B a, B b, uint64_t* out) {
    return forEachParent<K>(a, b, [out](int i, uint64_t index, B, B) { out[i] = index; });
  }

  /** As many as parentsOf or parentIndices can list. */
  size_t maxParents() const { return parentStates.size(); }

 private:
  // Methods copy `engine` into a local first: a local reference stays in a register, where a
  // member is loaded again after every byte the table stores (a char store may alias it).
  const BitboardEngine<B>& engine;
  const StateSpace& g;
  std::vector<ParentState<B>> parentStates;
  /** Where the parents reached by one P2 move lie: the group of rot b^ (b^ = b with the piece on
   *  `from` moved to `to`), whether it is stored mirrored, and its P1 placement as stored. They
   *  depend on b and the move only, not on P1's placement, so a pass, whose unit fixes b,
   *  computes each once and reuses it for all the unit's losses. Valid when stamp matches. */
  struct ParentGroup {
    uint64_t stamp = 0;
    uint64_t base = 0;
    B p1{};
    bool mirrored = false, selfMirror = false;
  };
  std::vector<ParentGroup> parentGroups;  // by from * n + to
  uint64_t parentStamp = 0;
  B parentsOfB{};  // the b the cache holds (any value at first: the stamp 0 entries are invalid)
  B rotParentsOf{}, mirRotParentsOf{};

  /** Calls put(i, index, a^, b^) for the i-th parent of (a, b) as stored (parentsOf's order);
   *  returns how many. */
  template <int K = 0, class Put>
  CCK_ALWAYS_INLINE int forEachParent(B a, B b, Put&& put) {
    const BitboardEngine<B>& e = engine;
    if (parentStamp == 0 || !(b == parentsOfB)) {
      parentStamp++;
      parentsOfB = b;
      rotParentsOf = e.rotate(b);
      mirRotParentsOf = e.mirror(rotParentsOf);
    }
    // The parent's P2 placement is rot a, or its mirror image where the parent is stored
    // mirrored (a coin toss: selected without a branch); a twin is the other one.
    const B rotA = e.rotate(a), mirRotA = e.mirror(rotA);
    int parents = 0;
    e.forEachMove(b, a | b, [&](int from, int to) {
      const ParentGroup& pg = parentGroup(from, to);
      const B pb = pg.mirrored ? mirRotA : rotA;
      put(parents++, pg.base + e.template rankP2<K>(pg.p1, pb), pg.p1, pb);
      if (pg.selfMirror) {
        const B twin = pg.mirrored ? rotA : mirRotA;
        put(parents++, pg.base + e.template rankP2<K>(pg.p1, twin), pg.p1, twin);
      }
      return true;
    });
    return parents;
  }

  /** The parent group of the P2 move from -> to out of `parentsOfB`, computed on first use. */
  const ParentGroup& parentGroup(int from, int to) {
    const BitboardEngine<B>& e = engine;
    ParentGroup& pg = parentGroups[static_cast<size_t>(from) * e.n + to];
    if (pg.stamp == parentStamp) return pg;
    const int f = e.n - 1 - from, t = e.n - 1 - to;  // rotated cells
    const B plain = rotParentsOf ^ cellBit<B>(f) ^ cellBit<B>(t);
    const uint64_t r1 = e.rankP1(plain);
    const int32_t group = g.groupOfRank[r1];
    pg.stamp = parentStamp;
    pg.mirrored = g.mirrored[r1] != 0;
    pg.p1 = pg.mirrored ? mirRotParentsOf ^ cellBit<B>(e.mirrorMap[f]) ^ cellBit<B>(e.mirrorMap[t]) : plain;
    pg.base = static_cast<uint64_t>(group) * e.p2Placements;
    pg.selfMirror = g.selfMirror[group] != 0;
    return pg;
  }
};
