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

/** Where the parents reached by one P2 move lie: the group of rot b^ (b^ = b with the piece on
 *  `from` moved to `to`), whether it is stored mirrored, its P1 placement as stored and the
 *  cells that leaves free. They depend on b and the move only, not on P1's placement: a pass
 *  unit, which fixes b, computes each once for all its losses (StateGraph::unitParentGroups). */
template <class B>
struct ParentGroup {
  uint64_t base = 0;
  B p1{}, free{};
  bool mirrored = false, selfMirror = false;
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

  /** childIndexOf through the unit's childCells, for a move to `to` of the piece whose
   *  `others` = childP2In(a, cells) ^ cells[from]. K: withPieces. */
  template <int K = 0>
  CCK_ALWAYS_INLINE uint64_t childIndexIn(B others, const ChildGroup<B>& cg, const B* cells, int to) const {
    return cg.base + engine.template rankSet<K>(others ^ cells[to]);
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

  /** Calls put(i, index) with the stored index of the i-th of the same parents: all a pass
   *  needs of them. Returns how many. K: withPieces. */
  template <int K = 0, class Put>
  CCK_ALWAYS_INLINE int forEachParentIndex(B a, B b, Put&& put) {
    return forEachParent<K>(a, b, [&put](int i, uint64_t index, B, B) { put(i, index); });
  }

  /** The parent groups of every move of P2 placement b: groups[j * n + to] for the j-th piece
   *  of b (increasing cells) moved to `to` (any cell not in b; the others stay unset). A pass
   *  unit's, for forEachParentIndexIn: no stamp to test per parent, and shared by the unit's helpers. */
  void unitParentGroups(B b, ParentGroup<B>* groups) const {
    const BitboardEngine<B>& e = engine;
    const B rotB = e.rotate(b), mirRotB = e.mirror(rotB);
    int j = 0;
    for (B pieces = b; any(pieces); pieces = clearLowest(pieces), j++)
      for (int to = 0; to < e.n; to++)
        if (!test(b, to)) groups[j * e.n + to] = parentGroup(rotB, mirRotB, lowest(pieces), to);
  }

  /** forEachParentIndex for a state (a, b) of a pass unit whose unitParentGroups are `groups`. */
  template <int K = 0, class Put>
  CCK_ALWAYS_INLINE int forEachParentIndexIn(B a, B b, const ParentGroup<B>* groups, Put&& put) const {
    const int n = engine.n;
    const auto rowOf = [groups, n](int j, int) {
      const ParentGroup<B>* row = groups + j * n;
      return [row](int to) -> const ParentGroup<B>& { return row[to]; };
    };
    return forEachParentWith<K>(a, b, rowOf, [&put](int i, uint64_t index, B, B) { put(i, index); });
  }

  /** As many as parentsOf or forEachParentIndex can list. */
  size_t maxParents() const { return parentStates.size(); }

 private:
  // Methods copy `engine` into a local first: a local reference stays in a register, where a
  // member is loaded again after every byte the table stores (a char store may alias it).
  const BitboardEngine<B>& engine;
  const StateSpace& g;
  std::vector<ParentState<B>> parentStates;
  /** The parent groups of parentsOfB's moves, computed on first use (by from * n + to): a pass
   *  visits a group's states with one b after another. Valid where the stamp matches. */
  struct CachedParentGroup {
    uint64_t stamp = 0;
    ParentGroup<B> group;
  };
  std::vector<CachedParentGroup> parentGroups;
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
    // The cache and its stamp in locals: the lookup stays in registers, inlined (the parents'
    // stores could alias the members, which would be loaded again after each).
    CachedParentGroup* const cache = parentGroups.data();
    const uint64_t stamp = parentStamp;
    const int n = e.n;
    const auto rowOf = [this, cache, stamp, n](int, int from) {
      CachedParentGroup* row = cache + from * n;
      return [this, row, stamp, from](int to) -> const ParentGroup<B>& {
        CachedParentGroup& c = row[to];
        if (c.stamp != stamp) fillParentGroup(c, from, to);
        return c.group;
      };
    };
    return forEachParentWith<K>(a, b, rowOf, put);
  }

  /** forEachParent with the parent groups of the j-th piece of b, on `from`, from
   *  rowOf(j, from)(to). */
  template <int K = 0, class RowOf, class Put>
  CCK_ALWAYS_INLINE int forEachParentWith(B a, B b, RowOf&& rowOf, Put&& put) const {
    const BitboardEngine<B>& e = engine;
    // The parent's P2 placement is rot a, or its mirror image where the parent is stored
    // mirrored (a coin toss: selected without a branch); a twin is the other one.
    const B rotA = e.rotate(a), mirRotA = e.mirror(rotA);
    const B occ = a | b;
    int parents = 0, j = 0;
    for (B pieces = b; any(pieces); pieces = clearLowest(pieces), j++) {
      const int from = lowest(pieces);
      const auto groupOf = rowOf(j, from);  // the groups of this piece's moves, by their cell
      e.forEachMoveFrom(from, occ, [&](int to) {
        const ParentGroup<B>& pg = groupOf(to);
        const B pb = pg.mirrored ? mirRotA : rotA;
        put(parents++, pg.base + e.template rankAmong<K>(pg.free, pb), pg.p1, pb);
        if (pg.selfMirror) {
          const B twin = pg.mirrored ? rotA : mirRotA;
          put(parents++, pg.base + e.template rankAmong<K>(pg.free, twin), pg.p1, twin);
        }
        return true;
      });
    }
    return parents;
  }

  /** The parent group of the P2 move from -> to out of b, given rot b and its mirror image. */
  ParentGroup<B> parentGroup(B rotB, B mirRotB, int from, int to) const {
    const BitboardEngine<B>& e = engine;
    const int f = e.n - 1 - from, t = e.n - 1 - to;  // rotated cells
    const B plain = rotB ^ cellBit<B>(f) ^ cellBit<B>(t);
    const uint64_t r1 = e.rankP1(plain);
    const int32_t group = g.groupOfRank[r1];
    ParentGroup<B> pg;
    pg.mirrored = g.mirrored[r1] != 0;
    pg.p1 = pg.mirrored ? mirRotB ^ cellBit<B>(e.mirrorMap[f]) ^ cellBit<B>(e.mirrorMap[t]) : plain;
    pg.free = ~pg.p1 & e.full;
    pg.base = static_cast<uint64_t>(group) * e.p2Placements;
    pg.selfMirror = g.selfMirror[group] != 0;
    return pg;
  }

  /** Fills the cache entry of the P2 move from -> to out of `parentsOfB`. */
  __attribute__((noinline)) void fillParentGroup(CachedParentGroup& c, int from, int to) {
    c.stamp = parentStamp;
    c.group = parentGroup(rotParentsOf, mirRotParentsOf, from, to);
  }
};
