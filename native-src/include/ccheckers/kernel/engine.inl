// The bitboard engine, compiled once per kernel. Include inside `namespace cck { namespace K {`
// with CCK_USE_BMI2 set to 1 (hardware pext/pdep; the including file puts every function here
// under the bmi2 target) or 0 (portable: no x86 intrinsics). Same semantics as core's
// engine/engine.ts; the shared test vectors and the randomized equivalence test hold both to it.

template <class B>
struct CellMasks {
  B neighbours, jumpOver, jumpTo;
  int overBitsLo, toBitsLo;  // popcount of the low word of jumpOver / jumpTo (U128 split)
  int pairCount;
  JumpPair pairs[6];
};

// --- pext / pdep over board words ------------------------------------------------------------
#if CCK_USE_BMI2
inline uint64_t pext(uint64_t x, uint64_t m) { return _pext_u64(x, m); }
inline uint64_t pdep(uint64_t x, uint64_t m) { return _pdep_u64(x, m); }
inline U128 pext(U128 x, U128 m) {
  uint64_t lo = _pext_u64(x.lo, m.lo), hi = _pext_u64(x.hi, m.hi);
  int n = popcount64(m.lo);
  return n == 64 ? U128{lo, hi} : U128{lo | (hi << n), n == 0 ? 0 : hi >> (64 - n)};
}
inline U128 pdep(U128 x, U128 m) {
  int n = popcount64(m.lo);
  uint64_t high = n == 64 ? x.hi : (x.lo >> n) | (n == 0 ? 0 : x.hi << (64 - n));
  return {_pdep_u64(x.lo, m.lo), _pdep_u64(high, m.hi)};
}
#else
inline uint64_t pdep(uint64_t x, uint64_t m) { return softPdep(x, m); }
inline U128 pdep(U128 x, U128 m) {
  int n = popcount64(m.lo);
  uint64_t high = n == 64 ? x.hi : (x.lo >> n) | (n == 0 ? 0 : x.hi << (64 - n));
  return {softPdep(x.lo, m.lo), softPdep(high, m.hi)};
}
#endif

template <class B>
class BitboardEngine {
 public:
  const Variant& v;
  const Binomials& C = Binomials::get();
  const ByteSelect& bytes = ByteSelect::get();  // per-byte popcount and select, portable paths
  int n, k;
  B full{}, goal[2]{}, startAreas{}, blockCells[2]{};
  int blockTip[2];
  uint64_t p1Placements, p2Placements;
  std::vector<CellMasks<B>> cell;
  std::vector<int> mirrorMap;
  bool popcountInstruction;  // the CPU has one: portable rankP2 uses it (hardwarePopcount)
  // Unrolled ranking of up to kUnrolledPieces pieces on boards of up to 64 cells (a 65th column
  // keeps an out-of-contract count inside the table): colexTerm[i][c] = C(c, i).
  static constexpr int kUnrolledPieces = 6;
  uint64_t colexTerm[kUnrolledPieces + 1][65] = {};
#if !CCK_USE_BMI2
  JumpMagic jumpMagic;  // portable single jumps on boards of up to 64 cells
  // freeRankTerm[j][v] = C(v - (k - j), j): the rank term of the j-th P2 piece, indexed by the
  // popcount rankAmongFree takes (its index among the free cells + the k - j pieces above it).
  uint64_t freeRankTerm[kUnrolledPieces + 1][65] = {};
#endif

  /** `hardwarePopcount`: the CPU has a popcount instruction (portable rankP2 then uses it). */
  BitboardEngine(const Variant& variant, bool hardwarePopcount)
      : v(variant),
        n(variant.cells),
        k(variant.pieces),
        popcountInstruction(hardwarePopcount)
#if !CCK_USE_BMI2
        ,
        jumpMagic(variant.geometry)
#endif
  {
    for (int c = 0; c < n; c++) full |= cellBit<B>(c);
    for (int c : v.p2Start) goal[0] |= cellBit<B>(c);
    for (int c : v.p1Start) goal[1] |= cellBit<B>(c);
    startAreas = goal[0] | goal[1];
    for (int c : {n - 2, n - 3, n - 4, n - 6}) blockCells[0] |= cellBit<B>(c);
    for (int c : {1, 2, 3, 5}) blockCells[1] |= cellBit<B>(c);
    blockTip[0] = n - 1;
    blockTip[1] = 0;
    p1Placements = C.c[n][k];
    p2Placements = C.c[n - k][k];
    cell.resize(n);
    for (int c = 0; c < n; c++) {
      CellMasks<B>& m = cell[c];
      m = {};
      for (int d : v.geometry.neighbours[c]) m.neighbours |= cellBit<B>(d);
      for (const JumpPair& j : v.geometry.jumps[c]) {
        m.jumpOver |= cellBit<B>(j.over);
        m.jumpTo |= cellBit<B>(j.to);
        m.pairs[m.pairCount++] = j;
      }
      m.overBitsLo = popcount64(lowWord(m.jumpOver));
      m.toBitsLo = popcount64(lowWord(m.jumpTo));
    }
    mirrorMap = v.geometry.mirror;
    for (int i = 1; i <= kUnrolledPieces; i++)
      for (int c = 0; c < 64; c++) colexTerm[i][c] = C.c[c][i];
#if !CCK_USE_BMI2
    for (int j = 1; j <= k && j <= kUnrolledPieces; j++)
      for (int value = k - j; value < 64; value++) freeRankTerm[j][value] = C.c[value - (k - j)][j];
#endif
  }

  static uint64_t lowWord(uint64_t x) { return x; }
  static uint64_t lowWord(U128 x) { return x.lo; }

  // --- moves -------------------------------------------------------------------------------

  /** Every single jump from `at` for occupancy `occ`. */
  B singleJumps(int at, B occ) const {
    const CellMasks<B>& m = cell[at];
#if CCK_USE_BMI2
    // The paper's method: pdep(pext(occ, over) & pext(~occ, to), to), bits of over/to paired.
    return pdep(pext(occ, m.jumpOver) & pext(~occ, m.jumpTo), m.jumpTo);
#else
    if constexpr (std::is_same_v<B, uint64_t>) {
      if (jumpMagic.ok) return jumpMagic.jumps(at, occ);
    }
    // Portable, 81 cells: test the (over, to) pairs directly; up to six branch-free bit tests.
    B out{};
    for (int i = 0; i < m.pairCount; i++) {
      const JumpPair& j = m.pairs[i];
      if (test(occ, j.over) & !test(occ, j.to)) out |= cellBit<B>(j.to);
    }
    return out;
#endif
  }

  /** Moves of the pieces `own` (part of `occ`), as (from, to) pairs; returns the count. */
  int generate(B own, B occ, uint8_t* out) const {
    int count = 0;
    forEachMove(own, occ, [&](int from, int to) {
      out[2 * count] = static_cast<uint8_t>(from);
      out[2 * count + 1] = static_cast<uint8_t>(to);
      count++;
      return true;
    });
    return count;
  }

  /** Calls visit(from, to) for each move of the pieces `own` (part of `occ`), in generate's
   *  order, until it returns false; false when it stopped early. The solver's visits take their
   *  moves so, without a list written and read back, and stop at the first child that decides. */
  template <class Visit>
  CCK_ALWAYS_INLINE bool forEachMove(B own, B occ, Visit&& visit) const {
    for (; any(own); own = clearLowest(own)) {
      const int from = lowest(own);
      if (!forEachMoveFrom(from, occ, [&](int to) { return visit(from, to); })) return false;
    }
    return true;
  }

  /** The moves of the piece on `from` alone, as forEachMove gives them (visit(to)): the solver's
   *  hot loops go piece by piece, and compute what a piece's moves share once. */
  template <class Visit>
  CCK_ALWAYS_INLINE bool forEachMoveFrom(int from, B occ, Visit&& visit) const {
    for (B steps = cell[from].neighbours & ~occ; any(steps); steps = clearLowest(steps))
      if (!visit(lowest(steps))) return false;
    // Jumps, depth first: the cells one jump from `from`, then from each cell reached (most
    // pieces have none, and are done at once). The piece's own cell stays occupied in occ.
    B fresh = singleJumps(from, occ);
    if (!any(fresh)) return true;
    B visited = fresh;
    int stack[96];
    int sp = 0;
    for (;;) {
      while (any(fresh)) {
        const int to = lowest(fresh);
        fresh = clearLowest(fresh);
        stack[sp++] = to;
        if (!visit(to)) return false;
      }
      if (sp == 0) return true;
      fresh = singleJumps(stack[--sp], occ) & ~visited;
      visited |= fresh;
    }
  }

  // --- rules (docs/rules.md section 4) ----------------------------------------------------------

  bool hasWon(int player, B p1, B p2) const {
    B g = goal[player];
    return (g & ~(p1 | p2)) == B{} && any((player == 0 ? p1 : p2) & g);
  }

  bool blockIllegal(int blocked, B p1, B p2, int toMove) const {
    B blocker = blocked == 0 ? p2 : p1;
    if (test(p1 | p2, blockTip[blocked])) return false;
    if ((blockCells[blocked] & ~blocker) != B{}) return false;
    if (v.rules == RuleMode::Published && toMove == blocked) {
      // Published-data exception: legal when the blocked side has no piece in either start area.
      return any((blocked == 0 ? p1 : p2) & startAreas);
    }
    return true;
  }

  bool isIllegal(B p1, B p2, int toMove) const {
    if (hasWon(toMove, p1, p2)) return true;
    if (k != 6) return false;
    return blockIllegal(0, p1, p2, toMove) || blockIllegal(1, p1, p2, toMove);
  }

  bool isTerminal(B p1, B p2, int toMove) const { return !isIllegal(p1, p2, toMove) && hasWon(1 - toMove, p1, p2); }

  int legalMoves(B p1, B p2, int toMove, uint8_t* out) const {
    if (isIllegal(p1, p2, toMove) || isTerminal(p1, p2, toMove)) return 0;
    int count = generate(toMove == 0 ? p1 : p2, p1 | p2, out);
    int kept = 0;
    for (int i = 0; i < count; i++) {
      B flip = cellBit<B>(out[2 * i]) | cellBit<B>(out[2 * i + 1]);
      bool legal = toMove == 0 ? !isIllegal(p1 ^ flip, p2, 1) : !isIllegal(p1, p2 ^ flip, 0);
      if (legal) {
        out[2 * kept] = out[2 * i];
        out[2 * kept + 1] = out[2 * i + 1];
        kept++;
      }
    }
    return kept;
  }

  // --- ranking (docs/rules.md section 6) --------------------------------------------------------

  /** Colex rank of a set of k cells (the placement of one side): sum of C(c_i, i + 1) over its
   *  cells in increasing order. On boards of up to 64 cells, unrolled with one table row per
   *  piece, indexed by the cell as it is; the tests of k are always predicted, and the code stays
   *  small enough to inline into the solver's loops. K > 0: k is K, known at compile time (the
   *  pass's hot loops, withPieces): no test of k per piece. */
  template <int K = 0>
  CCK_ALWAYS_INLINE uint64_t rankSet(B x) const {
    if constexpr (std::is_same_v<B, uint64_t> && K > 0) {
      static_assert(K <= kUnrolledPieces, "rankSet: K beyond the unrolled rows");
      uint64_t r = colexTerm[1][static_cast<unsigned>(lowest(x))];
      for (int i = 2; i <= K; i++) {
        x &= x - 1;
        r += colexTerm[i][static_cast<unsigned>(lowest(x))];
      }
      return r;
    } else if constexpr (std::is_same_v<B, uint64_t>) {
      if (k <= kUnrolledPieces) {
        uint64_t r = colexTerm[1][static_cast<unsigned>(lowest(x))];
        for (int i = 2; i <= kUnrolledPieces && i <= k; i++) {
          x &= x - 1;
          r += colexTerm[i][static_cast<unsigned>(lowest(x))];
        }
        return r;
      }
    }
    return rankSetAnyCount(x);
  }

  /** The same for a set of any size (fine-grained calls with arbitrary input). */
  uint64_t rankSetAnyCount(B x) const {
    uint64_t r = 0;
    for (int i = 1; any(x); i++) {
      r += C.c[lowest(x)][i];
      x = clearLowest(x);
    }
    return r;
  }

  /** The set of `pieces` cells among `cells` of colex rank r. */
  B unrankSet(uint64_t r, int pieces, int cells) const {
    B out{};
    int c = cells - 1;
    for (int i = pieces; i >= 1; i--) {
      while (C.c[c][i] > r) c--;
      out |= cellBit<B>(c);
      r -= C.c[c][i];
      c--;
    }
    return out;
  }

  /** x is a placement of one side: k pieces, on the board. The unrolled ranks assume one; the
   *  fine-grained calls send anything else to the general formulas. */
  bool isPlacement(B x) const { return popcount(x) == k && !any(x & ~full); }

  CCK_ALWAYS_INLINE uint64_t rankP1(B p1) const { return rankSet(p1); }
  B unrankP1(uint64_t r) const { return unrankSet(r, k, n); }

#if !CCK_USE_BMI2
  /** Portable rankP2 with the popcount instruction (k <= kUnrolledPieces). While x holds the
   *  pieces not yet counted, its lowest piece c is the j-th of k: x - 1 keeps x's bits above c and
   *  sets every bit below it, so popcount(free & (x - 1)) is c's index among the free cells plus
   *  the k - j pieces above c, and `freeRankTerm[j]` is indexed by it as it is. Per piece:
   *  subtract, and, popcount, one load; from one piece to the next only x &= x - 1. */
  template <int K = 0>
  CCK_ALWAYS_INLINE uint64_t rankAmongFree(uint64_t freeCells, uint64_t x) const {
    uint64_t belowAndAbove = x - 1;
    uint64_t r = freeRankTerm[1][hardwarePopcount(freeCells & belowAndAbove)];
    for (int j = 2; j <= (K > 0 ? K : kUnrolledPieces) && (K > 0 || j <= k); j++) {
      x &= belowAndAbove;
      belowAndAbove = x - 1;
      r += freeRankTerm[j][hardwarePopcount(freeCells & belowAndAbove)];
    }
    return r;
  }
#endif

  /** rankP2 with the cells P1 leaves free given (`free` = ~p1 & full): a pass's parents, whose
   *  free cells are computed once per unit (ParentGroup). */
  template <int K = 0>
  CCK_ALWAYS_INLINE uint64_t rankAmong(B free, B p2) const {
#if CCK_USE_BMI2
    return rankSet<K>(pext(p2, free));
#else
    if constexpr (std::is_same_v<B, uint64_t>) {
      if (popcountInstruction && k <= kUnrolledPieces) return rankAmongFree<K>(free, p2);
    }
    return rankP2<K>(~free & full, p2);
#endif
  }

  /** Rank of P2 among the cells P1 leaves free (K > 0: k is K, as in rankSet). */
  template <int K = 0>
  CCK_ALWAYS_INLINE uint64_t rankP2(B p1, B p2) const {
#if CCK_USE_BMI2
    return rankAmong<K>(~p1 & full, p2);
#else
    // Portable: a cell's index among the free cells is c - |P1 below c|; no pext needed.
    if constexpr (std::is_same_v<B, uint64_t>) {
      if (popcountInstruction && k <= kUnrolledPieces) return rankAmongFree<K>(~p1, p2);
      return rankP2ByPrefixCounts(p1, p2);
    } else {
      return rankP2AnyCount(p1, p2);
    }
#endif
  }

#if !CCK_USE_BMI2
  /** Portable rankP2 without a popcount instruction: |P1 below c| from per-byte prefix counts of
   *  P1 (one SWAR popcount and one multiply for all bytes) plus a table lookup for the bits of
   *  c's own byte: no loop-carried popcounts. */
  uint64_t rankP2ByPrefixCounts(uint64_t p1, uint64_t p2) const {
    uint64_t x = p1 - ((p1 >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    const uint64_t before = (x * 0x0101010101010101ULL) << 8;  // byte j: P1 pieces in bytes < j
    uint64_t r = 0;
    for (int i = 1; p2; i++) {
      int c = lowest(p2);
      p2 = clearLowest(p2);
      int shift = c & 56;
      unsigned inByte = static_cast<unsigned>(p1 >> shift) & ((1u << (c & 7)) - 1);
      r += C.c[c - static_cast<int>((before >> shift) & 0xff) - bytes.count[inByte]][i];
    }
    return r;
  }
#endif

  /** rankP2 of any input, core's definition: the colex rank of pext(p2, cells free of p1). A
   *  free cell c is the (c - |P1 below c|)-th free cell. */
  uint64_t rankP2AnyCount(B p1, B p2) const {
    uint64_t r = 0;
    B x = p2 & ~p1 & full;
    for (int i = 1; any(x); i++) {
      const int c = lowest(x);
      x = clearLowest(x);
      r += C.c[c - popcount(p1 & below<B>(c))][i];
    }
    return r;
  }

  B unrankP2(B p1, uint64_t r) const {
#if !CCK_USE_BMI2
    if constexpr (std::is_same_v<B, uint64_t>) {
      // Portable: unrank among the free cells, then map each index c to its cell without a
      // pdep: c + |{j : q_j - j <= c}| for P1's cells q_0 < q_1 < ... (q_j - j free cells lie
      // below q_j). The indices come out in descending order, so that count only goes down.
      int freeBelow[kMaxPieces], t = 0;
      for (uint64_t x = p1; x; x = clearLowest(x), t++) freeBelow[t] = lowest(x) - t;
      uint64_t out = 0;
      int c = n - k - 1;
      for (int i = k; i >= 1; i--) {
        while (C.c[c][i] > r) c--;
        r -= C.c[c][i];
        while (t > 0 && freeBelow[t - 1] > c) t--;
        out |= uint64_t{1} << (c + t);
        c--;
      }
      return out;
    }
#endif
    return pdep(unrankSet(r, k, n - k), ~p1 & full);
  }

  /** The next P2 placement in rank order among the cells free of p1; false after the last. */
  bool nextP2(B p1, B p2, B& out) const {
    uint64_t r = rankP2AnyCount(p1, p2);  // not a hot path: any input, core's formula
    if (r + 1 >= p2Placements) return false;
    out = isPlacement(p1) ? unrankP2(p1, r + 1) : unrankP2AnyP1(p1, r + 1);
    return true;
  }

  /** unrankP2 for a P1 of any size, core's definition: pdep of the k-set of rank r among n - k
   *  cells onto the cells P1 leaves free (unrankP2 itself assumes P1 has k pieces). */
  B unrankP2AnyP1(B p1, uint64_t r) const { return pdep(unrankSet(r, k, n - k), ~p1 & full); }

  // --- symmetry ----------------------------------------------------------------------------

  B mirror(B x) const {
    B out{};
    while (any(x)) {
      out |= cellBit<B>(mirrorMap[lowest(x)]);
      x = clearLowest(x);
    }
    return out;
  }

  B rotate(B x) const {
    B out{};
    while (any(x)) {
      out |= cellBit<B>(n - 1 - lowest(x));
      x = clearLowest(x);
    }
    return out;
  }

  /** P1 to move, and the lower-ranked of the position and its mirror image. Not a hot path:
   *  ranked as core ranks any input, rank = rankP1 * p2Placements + rankP2 (rankP2 can exceed
   *  p2Placements where the input has too many pieces, so this is not the same as comparing the
   *  pairs; for positions of the variant it is). */
  void canonical(B p1, B p2, int toMove, B& c1, B& c2) const {
    B a = toMove == 0 ? p1 : rotate(p2);
    B b = toMove == 0 ? p2 : rotate(p1);
    if (!v.mirrorSymmetric) {
      c1 = a;
      c2 = b;
      return;
    }
    B ma = mirror(a), mb = mirror(b);
#if defined(__SIZEOF_INT128__)
    using Wide = unsigned __int128;
    const auto rank = [&](B x, B y) { return Wide{rankSetAnyCount(x)} * p2Placements + rankP2AnyCount(x, y); };
    const bool useMirror = rank(ma, mb) < rank(a, b);
#else
    uint64_t ra = rankSetAnyCount(a), rma = rankSetAnyCount(ma);
    bool useMirror = rma < ra || (rma == ra && rankP2AnyCount(ma, mb) < rankP2AnyCount(a, b));
#endif
    c1 = useMirror ? ma : a;
    c2 = useMirror ? mb : b;
  }
};

/** Calls f(std::integral_constant<int, K>()) with K = e.k where the pass's hot loops are compiled
 *  for it (3 to 6 pieces on boards of up to 64 cells: rankSet and rankP2 with no test of k per
 *  piece), else with K = 0 (k read at run time). Once per pass unit: the loops stay generic. */
template <class B, class F>
CCK_ALWAYS_INLINE void withPieces(const BitboardEngine<B>& e, F&& f) {
  if constexpr (std::is_same_v<B, uint64_t>) {
    switch (e.k) {
      case 3: return f(std::integral_constant<int, 3>());
      case 4: return f(std::integral_constant<int, 4>());
      case 5: return f(std::integral_constant<int, 5>());
      case 6: return f(std::integral_constant<int, 6>());
      default: break;
    }
  }
  f(std::integral_constant<int, 0>());
}

