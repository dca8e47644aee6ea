// The solver's state space (core's solver-space/state-space.ts): P1 placements grouped by mirror
// class, the proof order of the pass units, and the loop over placements among free cells.
// Included after engine.inl, in the same kernel namespace.

/** The state space (core's StateSpace): groups of P1 placements by mirror class, and the pass
 *  units in proof order. */
struct StateSpace {
  std::vector<uint64_t> rankOf;      // representative's P1 rank, per group
  std::vector<int32_t> groupOfRank;  // per P1 rank
  std::vector<uint8_t> mirrored;     // per P1 rank: 1 when it is the mirror image of its representative
  std::vector<uint8_t> selfMirror;   // per group: 1 when its placement is its own mirror image in a
                                     // mirror-symmetric variant: (a, b) and (a, mirror b) both stored
  std::vector<uint32_t> passOrder;   // pass units (P2 placements) in proof order
};

/** P2 placements by total distance of P2 from its goal (sum of rows; P2 heads for row 0), ties
 *  by rank: a pass then meets positions roughly in order of distance to the end, so proofs feed
 *  later ones in the same pass (7x7/3, before revisits: 94.5% proven in pass 1, 84.4% in rank
 *  order). The same order as StateSpace.passOrder in the TS core. */
template <class B>
std::vector<uint32_t> proofOrder(const BitboardEngine<B>& e) {
  const std::vector<int>& row = e.v.geometry.row;
  uint64_t units = e.p1Placements;
  std::vector<uint16_t> distance(units);
  std::vector<uint32_t> count(static_cast<size_t>(2 * e.v.m) * e.k + 1, 0);
  for (uint64_t u = 0; u < units; u++) {
    int sum = 0;
    for (B b = e.unrankP1(u); any(b); b = clearLowest(b)) sum += row[lowest(b)];
    distance[u] = static_cast<uint16_t>(sum);
    count[sum + 1]++;
  }
  for (size_t d = 1; d < count.size(); d++) count[d] += count[d - 1];  // counting sort, stable
  std::vector<uint32_t> order(units);
  for (uint64_t u = 0; u < units; u++) order[count[distance[u]]++] = static_cast<uint32_t>(u);
  return order;
}

/** The state space of the variant (the same numbering as StateSpace in the TS core). */
template <class B>
std::unique_ptr<StateSpace> buildStateSpace(const BitboardEngine<B>& e) {
  // Groups and pass units are numbered in 32 bits (int32_t groupOfRank, uint32_t units): refuse a
  // variant past that bound instead of wrapping.
  if (e.p1Placements > static_cast<uint64_t>(INT32_MAX)) throw std::invalid_argument("too many P1 placements for the solver (over 2^31)");
  const bool mirrorSymmetric = e.v.mirrorSymmetric;
  auto g = std::make_unique<StateSpace>();
  uint64_t total = e.p1Placements;
  g->groupOfRank.assign(total, -1);
  g->mirrored.assign(total, 0);
  for (uint64_t r = 0; r < total; r++) {
    if (g->groupOfRank[r] >= 0) continue;
    uint64_t mr = mirrorSymmetric ? e.rankP1(e.mirror(e.unrankP1(r))) : r;
    int32_t id = static_cast<int32_t>(g->rankOf.size());
    g->rankOf.push_back(r);
    g->selfMirror.push_back(mirrorSymmetric && mr == r ? 1 : 0);
    g->groupOfRank[r] = id;
    if (mr != r) {
      g->groupOfRank[mr] = id;
      g->mirrored[mr] = 1;
    }
  }
  g->passOrder = proofOrder(e);
  return g;
}

/**
 * The placements of k pieces among the cells a set leaves free, in colex order of their indices
 * among the free cells (rankP2's order): the loop the bench's baseline, init and the pass share.
 * cell(j) is the j-th piece's cell, increasing in j.
 */
template <class B>
struct FreePlacements {
  int free[kMaxCells], f = 0, combo[kMaxPieces], k;

  FreePlacements(const BitboardEngine<B>& e, B occupied) : FreePlacements(e, occupied, e.k) {}
  /** Placements of `pieces` pieces (at most as many as there are free cells; 0: one, empty). */
  FreePlacements(const BitboardEngine<B>& e, B occupied, int pieces) : k(pieces) {
    for (int c = 0; c < e.n; c++)
      if (!test(occupied, c)) free[f++] = c;
    first();
  }
  void first() {
    for (int j = 0; j < k; j++) combo[j] = j;
  }
  /** To the next placement; false (and unchanged) after the last. */
  bool next() {
    for (int i = 0; i < k; i++) {
      int limit = i + 1 < k ? combo[i + 1] : f;
      if (combo[i] + 1 < limit) {
        combo[i]++;
        for (int j = 0; j < i; j++) combo[j] = j;
        return true;
      }
    }
    return false;
  }
  int cell(int j) const { return free[combo[j]]; }
  B placement() const {
    B x{};
    for (int j = 0; j < k; j++) x |= cellBit<B>(cell(j));
    return x;
  }
};
