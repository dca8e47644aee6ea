// KernelApi over Engine<B>: fine-grained calls, batches (describe, bench) and the solver passes.
// Included after engine.inl, in the same kernel namespace.

/** The state space of core's solver-space/state-space.ts: P1 placements grouped by mirror class. */
struct Groups {
  std::vector<uint64_t> rankOf;      // representative's P1 rank, per group
  std::vector<int32_t> groupOfRank;  // per P1 rank
  std::vector<uint8_t> mirrored;     // per P1 rank: 1 when it is the mirror image of its representative
  std::vector<uint8_t> selfMirror;   // per group: 1 when its placement is its own mirror image in a
                                     // mirror-symmetric variant: (a, b) and (a, mirror b) both stored
  std::vector<uint32_t> passOrder;   // pass units (P2 placements) in proof order
};

inline uint32_t moveHash(int from, int to) { return static_cast<uint32_t>(from * 128 + to + 1) * 0x9E3779B1u; }

/**
 * The placements of k pieces among the cells a set leaves free, in colex order of their indices
 * among the free cells (rankP2's order): the loop the bench's baseline, init and the pass share.
 * cell(j) is the j-th piece's cell, increasing in j.
 */
template <class B>
struct FreePlacements {
  int free[kMaxCells], f = 0, combo[kMaxPieces], k;

  FreePlacements(const Engine<B>& e, B occupied) : k(e.k) {
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

template <class B>
class Kernel final : public KernelApi {
 public:
  Kernel(const Variant& v, const char* kernelName, bool hardwarePopcount) : variant_(v), e_(variant_, hardwarePopcount), name_(kernelName) {}
  const char* name() const override { return name_; }

  static B board(const uint32_t* w) { return fromWords<B>(w); }
  static void words(B x, uint32_t* out) {
    for (int w = 0; w < 3; w++) out[w] = word(x, w);
  }

  int moves(const PosWords& p, uint8_t* out) override {
    B p1 = board(p.p1), p2 = board(p.p2);
    return e_.generate(p.toMove == 0 ? p1 : p2, p1 | p2, out);
  }
  int legalMoves(const PosWords& p, uint8_t* out) override { return e_.legalMoves(board(p.p1), board(p.p2), p.toMove, out); }
  bool hasWon(int player, const PosWords& p) override { return e_.hasWon(player, board(p.p1), board(p.p2)); }
  bool isIllegal(const PosWords& p) override { return e_.isIllegal(board(p.p1), board(p.p2), p.toMove); }
  bool isTerminal(const PosWords& p) override { return e_.isTerminal(board(p.p1), board(p.p2), p.toMove); }
  // The engine ranks placements of exactly k pieces on the board (P2's apart from P1's); other
  // input takes the general formulas, which are core's (for P2, the rank of pext(p2, free cells)).
  uint64_t rankP1(const uint32_t* p1) override {
    const B x = board(p1);
    return e_.isPlacement(x) ? e_.rankP1(x) : e_.rankSetAnyCount(x);
  }
  void unrankP1(uint64_t r, uint32_t* out) override { words(e_.unrankP1(r), out); }
  uint64_t rankP2(const uint32_t* p1, const uint32_t* p2) override {
    const B a = board(p1), b = board(p2);
    return e_.isPlacement(b) && !any(a & b) ? e_.rankP2(a, b) : e_.rankP2AnyCount(a, b);
  }
  void unrankP2(const uint32_t* p1, uint64_t r, uint32_t* out) override {
    const B a = board(p1);
    words(e_.isPlacement(a) ? e_.unrankP2(a, r) : e_.unrankP2AnyP1(a, r), out);
  }
  bool nextP2(const uint32_t* p1, const uint32_t* p2, uint32_t* out) override {
    B next{};
    if (!e_.nextP2(board(p1), board(p2), next)) return false;
    words(next, out);
    return true;
  }
  void mirror(const uint32_t* set, uint32_t* out) override { words(e_.mirror(board(set)), out); }
  void rotate(const uint32_t* set, uint32_t* out) override { words(e_.rotate(board(set)), out); }
  void canonical(const PosWords& p, PosWords& out) override {
    B c1{}, c2{};
    e_.canonical(board(p.p1), board(p.p2), p.toMove, c1, c2);
    words(c1, out.p1);
    words(c2, out.p2);
    out.toMove = 0;
  }

  void describe(const uint32_t* in, size_t count, double* out) override {
    std::vector<uint8_t> mv(2 * static_cast<size_t>(e_.n) * e_.k + 2);
    for (size_t i = 0; i < count; i++, in += 7, out += kDescribeFields) {
      B p1 = board(in), p2 = board(in + 3);
      int toMove = static_cast<int>(in[6]);
      bool illegal = e_.isIllegal(p1, p2, toMove);
      out[0] = (e_.hasWon(0, p1, p2) ? 1 : 0) | (e_.hasWon(1, p1, p2) ? 2 : 0) | (illegal ? 4 : 0) |
               (e_.isTerminal(p1, p2, toMove) ? 8 : 0);
      int np = e_.generate(toMove == 0 ? p1 : p2, p1 | p2, mv.data());
      uint32_t h = 0;
      for (int m = 0; m < np; m++) h += moveHash(mv[2 * m], mv[2 * m + 1]);
      out[1] = np;
      out[2] = h;
      int nl = e_.legalMoves(p1, p2, toMove, mv.data());
      h = 0;
      for (int m = 0; m < nl; m++) h += moveHash(mv[2 * m], mv[2 * m + 1]);
      out[3] = nl;
      out[4] = h;
      uint64_t r2 = e_.rankP2(p1, p2);
      out[5] = static_cast<double>(e_.rankP1(p1));
      out[6] = static_cast<double>(r2);
      B c1{}, c2{};
      e_.canonical(p1, p2, toMove, c1, c2);
      out[7] = static_cast<double>(e_.rankP1(c1));
      out[8] = static_cast<double>(e_.rankP2(c1, c2));
      out[9] = wordsXor(e_.unrankP2(p1, (r2 + 1) % e_.p2Placements));
      B next{};
      out[10] = e_.nextP2(p1, p2, next) ? static_cast<double>(wordsXor(next)) : -1;
      out[11] = wordsXor(e_.mirror(p1)) ^ wordsXor(e_.rotate(p2));
    }
  }

  // --- benchmark loops (definitions shared with core's runBench; checksums must agree) --------

  BenchResult bench(BenchOp op, const PosWords& pw, uint64_t iterations) override {
    B p1 = board(pw.p1), p2 = board(pw.p2);
    uint32_t checksum = 0;
    std::vector<uint8_t> mv(2 * static_cast<size_t>(e_.n) * e_.k + 2);
    std::vector<B> samples;
    if (op == BenchOp::RankP1 || op == BenchOp::RankP2) {
      uint64_t count = std::min<uint64_t>(kBenchSamples, op == BenchOp::RankP1 ? e_.p1Placements : e_.p2Placements);
      for (uint64_t s = 0; s < count; s++) samples.push_back(op == BenchOp::RankP1 ? e_.unrankP1(s) : e_.unrankP2(p1, s));
    }
    auto start = std::chrono::steady_clock::now();
    switch (op) {
      case BenchOp::Winner:
        for (uint64_t i = 0; i < iterations; i++) {
          checksum += e_.hasWon(0, p1, p2) ? 1 : 0;
          checksum += e_.hasWon(1, p1, p2) ? 2 : 0;
          asm volatile("" : "+r"(checksum));  // keep the loop from being folded
        }
        break;
      case BenchOp::Successors: {
        B own = pw.toMove == 0 ? p1 : p2;
        B occ = p1 | p2;
        for (uint64_t i = 0; i < iterations; i++) {
          asm volatile("" : "+m"(own), "+m"(occ));
          int count = e_.generate(own, occ, mv.data());
          for (int m = 0; m < count; m++) {
            B flip = cellBit<B>(mv[2 * m]) | cellBit<B>(mv[2 * m + 1]);
            own ^= flip;  // apply
            checksum += word0(own) & 0xff;
            own ^= flip;  // undo
          }
          checksum += static_cast<uint32_t>(count);
        }
        break;
      }
      case BenchOp::RankP1:
      case BenchOp::RankP2: {
        size_t s = 0, count = samples.size();
        for (uint64_t i = 0; i < iterations; i++) {
          uint64_t r = op == BenchOp::RankP1 ? e_.rankP1(samples[s]) : e_.rankP2(p1, samples[s]);
          checksum += static_cast<uint32_t>(r);
          if (++s == count) s = 0;
        }
        break;
      }
      case BenchOp::UnrankP1:
      case BenchOp::UnrankP2: {
        uint64_t count = op == BenchOp::UnrankP1 ? e_.p1Placements : e_.p2Placements;
        for (uint64_t i = 0, r = 0; i < iterations; i++) {
          B x = op == BenchOp::UnrankP1 ? e_.unrankP1(r) : e_.unrankP2(p1, r);
          checksum += wordsXor(x);
          if (++r == count) r = 0;
        }
        break;
      }
      case BenchOp::IncrementP2: {
        // Next P2 placement among the free cells, in colex order, wrapping to the first.
#if CCK_USE_BMI2
        B freeCells = ~p1 & full();
        uint64_t first = (uint64_t{1} << e_.k) - 1, limit = uint64_t{1} << (e_.n - e_.k);
        if constexpr (std::is_same_v<B, uint64_t>) {
          uint64_t x = first;
          for (uint64_t i = 0; i < iterations; i++) {
            // Gosper's hack on the compressed set; the division by the lowest bit is a shift
            uint64_t ripple = x + (x & (~x + 1));
            x = ripple >= limit ? first : (((ripple ^ x) >> 2) >> __builtin_ctzll(x)) | ripple;
            checksum += word0(pdep(x, freeCells));
          }
          break;
        }
#else
        if constexpr (std::is_same_v<B, uint64_t>) {
          // No pext/pdep: Gosper's step directly on the board. Adding the lowest piece to the
          // set with every non-free cell filled in carries across P1's pieces; the block of
          // pieces the carry cleared, less one, goes back onto the lowest free cells.
          uint64_t freeCells = ~p1 & full(), first = 0;
          for (uint64_t rest = freeCells, j = 0; j < static_cast<uint64_t>(e_.k); j++, rest &= rest - 1) first |= rest & (~rest + 1);
          uint64_t x = first;
          for (uint64_t i = 0; i < iterations; i++) {
            uint64_t next = ((x | ~freeCells) + (x & (~x + 1))) & freeCells;
            if (next == 0) {
              x = first;  // past the last placement: wrap
            } else {
              uint64_t cleared = x & ~next;
              if (cleared & (cleared - 1)) {  // more than one: refill the lowest free cells
                uint64_t rest = freeCells;
                for (int c = popcount64(cleared) - 1; c > 0; c--, rest &= rest - 1) next |= rest & (~rest + 1);
              }
              x = next;
            }
            checksum += word0(x);
          }
          break;
        }
#endif
        FreePlacements<B> placements(e_, p1);
        for (uint64_t i = 0; i < iterations; i++) {
          if (!placements.next()) placements.first();
          checksum += word0(placements.placement());
        }
        break;
      }
    }
    auto end = std::chrono::steady_clock::now();
    return {static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()), checksum};
  }

  B full() const { return e_.full; }

  // --- solver ------------------------------------------------------------------------------

  uint64_t solverGroups() override { return groups().rankOf.size(); }
  uint64_t solverPassUnits() override { return e_.p1Placements; }
  int solverGroupWeight(uint32_t group) override {
    uint64_t r = groups().rankOf.at(group);
    return !variant_.mirrorSymmetric || e_.rankP1(e_.mirror(e_.unrankP1(r))) == r ? 1 : 2;
  }

  KernelStats solverInit(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads, uint32_t firstGroup) override {
    const TableWindow window{firstGroup, 0, nullptr, 0, 0, 0, false};
    return run(table, bytes, from, to, threads, Mode::Init, nullptr, 0, 0, false, &window);  // the groups its bytes hold
  }
  KernelStats solverPass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads, const TableWindow* window) override {
    return run(table, bytes, from, to, threads, Mode::Pass, nullptr, 0, 0, false, window);
  }
  KernelStats solverSparsePass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads, bool descending,
                               const TableWindow* window) override {
    return run(table, bytes, from, to, threads, Mode::Sparse, nullptr, 0, 0, descending, window);
  }
  KernelStats solverDistanceInit(uint8_t* table, size_t bytes, uint8_t* distances, size_t distanceBytes, uint32_t from, uint32_t to,
                                 int threads) override {
    return run(table, bytes, from, to, threads, Mode::DistanceInit, distances, distanceBytes);
  }
  KernelStats solverDistanceLayer(uint8_t* table, size_t bytes, uint8_t* distances, size_t distanceBytes, int depth, uint32_t from,
                                  uint32_t to, int threads) override {
    if (depth < 0 || depth >= kMaxDistance) throw std::invalid_argument("distance layer outside 0..253");
    return run(table, bytes, from, to, threads, Mode::DistanceLayer, distances, distanceBytes, depth);
  }

 private:
  Variant variant_;
  Engine<B> e_;
  const char* name_;
  std::unique_ptr<Groups> groups_;
  std::mutex groupsMutex_;

  const Groups& groups() {
    std::lock_guard<std::mutex> lock(groupsMutex_);
    if (!groups_) {
      // Groups and pass units are numbered in 32 bits (int32_t groupOfRank, uint32_t units):
      // refuse a variant past that bound instead of wrapping.
      if (e_.p1Placements > static_cast<uint64_t>(INT32_MAX)) throw std::invalid_argument("too many P1 placements for the solver (over 2^31)");
      auto g = std::make_unique<Groups>();
      uint64_t total = e_.p1Placements;
      g->groupOfRank.assign(total, -1);
      g->mirrored.assign(total, 0);
      for (uint64_t r = 0; r < total; r++) {
        if (g->groupOfRank[r] >= 0) continue;
        uint64_t mr = variant_.mirrorSymmetric ? e_.rankP1(e_.mirror(e_.unrankP1(r))) : r;
        int32_t id = static_cast<int32_t>(g->rankOf.size());
        g->rankOf.push_back(r);
        g->selfMirror.push_back(variant_.mirrorSymmetric && mr == r ? 1 : 0);
        g->groupOfRank[r] = id;
        if (mr != r) {
          g->groupOfRank[mr] = id;
          g->mirrored[mr] = 1;
        }
      }
      g->passOrder = proofOrder();
      groups_ = std::move(g);
    }
    return *groups_;
  }

  /** P2 placements by total distance of P2 from its goal (sum of rows; P2 heads for row 0),
   *  ties by rank: a pass then meets positions roughly in order of distance to the end, so
   *  proofs feed later ones in the same pass (7x7/3, before revisits: 94.5% proven in pass 1,
   *  84.4% in rank order). The same order as StateSpace.passOrder in the TS core. */
  std::vector<uint32_t> proofOrder() const {
    const std::vector<int>& row = variant_.geometry.row;
    uint64_t units = e_.p1Placements;
    std::vector<uint16_t> distance(units);
    std::vector<uint32_t> count(static_cast<size_t>(2 * variant_.m) * e_.k + 1, 0);
    for (uint64_t u = 0; u < units; u++) {
      int sum = 0;
      for (B b = e_.unrankP1(u); any(b); b = clearLowest(b)) sum += row[lowest(b)];
      distance[u] = static_cast<uint16_t>(sum);
      count[sum + 1]++;
    }
    for (size_t d = 1; d < count.size(); d++) count[d] += count[d - 1];  // counting sort, stable
    std::vector<uint32_t> order(units);
    for (uint64_t u = 0; u < units; u++) order[count[distance[u]]++] = static_cast<uint32_t>(u);
    return order;
  }

  /**
   * The table a kernel call works on (core's TableWindow, TsSolverKernel's parts): part 0 holds
   * the stored states [lo0, hi0) (groups [g0, gEnd0)) from byte byte0 of the table on, in t0;
   * part 1 (empty without one) the same in t1. Without a window (kWindow false: the in-memory
   * solve, compiled without the part tests, which cost it 7%), part 0 is the whole table.
   */
  template <bool kWindow>
  struct Parts {
    uint8_t* t0 = nullptr;
    uint64_t lo0 = 0, hi0 = 0, byte0 = 0, g0 = 0, gEnd0 = 0;
    uint8_t* t1 = nullptr;
    uint64_t lo1 = 0, hi1 = 0, byte1 = 0, g1 = 0, gEnd1 = 0;
    /** A window: parents outside it are not told of a new loss, so a visit looks past an
     *  unknown child for a lost one. */
    bool seekLoss = false;
    bool crossOnly = false;

    bool inFirst(uint64_t index) const { return !kWindow || (index >= lo0 && index < hi0); }
    bool contains(uint64_t index) const { return inFirst(index) || (index >= lo1 && index < hi1); }
    bool seeksLoss() const { return kWindow && seekLoss; }
    /** 0 or 1: the part that holds group g; -1 for none. */
    int partOfGroup(uint64_t group) const { return group >= g0 && group < gEnd0 ? 0 : group >= g1 && group < gEnd1 ? 1 : -1; }
    /** The byte of stored state `index` (in one of the parts). */
    uint8_t* byte(uint64_t index) const { return inFirst(index) ? t0 + ((index >> 2) - byte0) : t1 + ((index >> 2) - byte1); }
    int load(uint64_t index) const { return (__atomic_load_n(byte(index), __ATOMIC_RELAXED) >> ((index & 3) << 1)) & 3; }
    /** Sets a value where it was UNKNOWN; true when this call made the change. */
    bool prove(uint64_t index, int value) const {
      uint8_t shift = static_cast<uint8_t>((index & 3) << 1);
      uint8_t old = __atomic_fetch_or(byte(index), static_cast<uint8_t>(value << shift), __ATOMIC_RELAXED);
      return ((old >> shift) & 3) == 0;
    }
  };

  /** The parts of a call, checked: each starts on a byte of the table and fits its bytes. */
  template <bool kWindow>
  Parts<kWindow> partsOf(uint8_t* table, size_t bytes, const TableWindow* w, bool init) {
    const uint64_t per = e_.p2Placements, total = groups().rankOf.size();
    Parts<kWindow> p;
    p.t0 = table;
    if (w == nullptr) {
      if (bytes < (total * per + 3) / 4) throw std::invalid_argument("solver table is smaller than the state space");
      p.gEnd0 = total;
      p.hi0 = total * per;
      return p;
    }
    const auto check = [&](uint64_t first, uint64_t count, size_t size, const char* what) {
      if (first + count > total) throw std::invalid_argument(std::string("window ") + what + ": groups outside the state space");
      if (first * per % 4 != 0) throw std::invalid_argument(std::string("window ") + what + ": does not start on a byte of the table");
      if (size < (count * per + 3) / 4) throw std::invalid_argument(std::string("window ") + what + ": fewer bytes than its groups");
    };
    // Init's part is the groups its bytes hold from firstGroup on.
    const uint64_t first = std::min<uint64_t>(total, w->firstGroup);
    const uint64_t count0 = init ? std::min<uint64_t>(total - first, bytes * 4 / per) : w->groups;
    check(w->firstGroup, count0, bytes, "table");
    p.g0 = w->firstGroup;
    p.gEnd0 = p.g0 + count0;
    p.lo0 = p.g0 * per;
    p.hi0 = p.gEnd0 * per;
    p.byte0 = p.lo0 >> 2;
    if (w->other != nullptr && w->otherGroups > 0) {
      check(w->otherFirstGroup, w->otherGroups, w->otherBytes, "other part");
      p.t1 = w->other;
      p.g1 = w->otherFirstGroup;
      p.gEnd1 = p.g1 + w->otherGroups;
      if (p.g1 < p.gEnd0 && p.g0 < p.gEnd1) throw std::invalid_argument("window: the two parts overlap");
      p.lo1 = p.g1 * per;
      p.hi1 = p.gEnd1 * per;
      p.byte1 = p.lo1 >> 2;
    }
    p.seekLoss = !init;
    p.crossOnly = w->crossOnly;
    return p;
  }

  enum : int { kUnknown = 0, kLoss = 1, kWin = 2, kIllegal = 3 };
  // Distance tables: one byte per stored state (core's NO_DISTANCE, MAX_DISTANCE).
  static constexpr int kNoDistance = 255, kMaxDistance = 254;
  static int loadDistance(const uint8_t* distances, uint64_t index) { return __atomic_load_n(&distances[index], __ATOMIC_RELAXED); }
  /** Eight consecutive bytes of a shared table, little-endian, each read as the byte it is: every
   *  concurrent access to the tables is one byte wide (other threads prove and set single bytes
   *  with byte-wide atomics; mixing those with 64-bit atomic loads of the same bytes is undefined
   *  behaviour in C++, whatever x86 and arm64 do with it). */
  static uint64_t loadEightBytes(const uint8_t* p) {
    const auto at = [p](int b) { return static_cast<uint64_t>(__atomic_load_n(&p[b], __ATOMIC_RELAXED)) << (8 * b); };
    return at(0) | at(1) | at(2) | at(3) | at(4) | at(5) | at(6) | at(7);  // unrolled: 8 loads, no loop
  }
  /** Sets a distance where there was none; true when this call made the change. */
  static bool setDistance(uint8_t* distances, uint64_t index, int distance) {
    uint8_t expected = kNoDistance;
    return __atomic_compare_exchange_n(&distances[index], &expected, static_cast<uint8_t>(distance), false, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
  }

  template <bool kWindow>
  struct Worker {
    Kernel& kernel;
    const Groups& g;
    const Parts<kWindow>& table;
    KernelStats stats{};
    std::vector<uint8_t> moves, parentMoves;
    std::vector<uint64_t> childIndex;
    struct UnitState {
      uint64_t index;
      B p1;
    };
    std::vector<UnitState> unitStates;  // the states of the current pass unit
    struct ParentState {
      uint64_t index;
      B a, b;
    };
    std::vector<ParentState> parentStates;  // parents (and mirror twins) of a state, see parentIndices
    /** Where the parents reached by one P2 move lie: the group of rot b^ (b^ = b with the piece
     *  on `from` moved to `to`), whether it is stored mirrored, and its P1 placement as stored.
     *  They depend on b and the move only, not on P1's placement, so a pass, whose unit fixes b,
     *  computes each once and reuses it for all the unit's losses. Valid when stamp matches. */
    struct ParentGroup {
      uint64_t stamp = 0;
      uint64_t base = 0;
      B p1{};
      bool mirrored = false, selfMirror = false;
    };
    std::vector<ParentGroup> parentGroups;  // by from * n + to
    uint64_t parentStamp = 0;
    B parentsOf{};  // the b the cache holds (any value at first: the stamp 0 entries are invalid)
    B rotParentsOf{}, mirRotParentsOf{};
    Worker(Kernel& k, const Groups& groups, const Parts<kWindow>& t)
        : kernel(k),
          g(groups),
          table(t),
          moves(2 * static_cast<size_t>(k.e_.n) * k.e_.k + 2),
          parentMoves(moves.size()),
          childIndex(moves.size() / 2),
          parentStates(moves.size()),
          parentGroups(static_cast<size_t>(k.e_.n) * k.e_.n) {}

    /** Illegal and terminal states, and wins in one move: P1 fills its goal with a legal move.
     *  Knowing those before the first pass lets it prove most of the game in one sweep. */
    void init(uint64_t index, B a, B b) {
      const Engine<B>& e = kernel.e_;
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

    /** Where the children of states with P2 placement b live: (rot b, rot a', P1 to move),
     *  mirrored into its group when rot b is not the representative. Same for every a. */
    struct ChildGroup {
      B p1{};
      uint64_t base = 0;
      bool mirrored = false;
    };
    ChildGroup childGroup(B b) const {
      const Engine<B>& e = kernel.e_;
      ChildGroup cg;
      B rb = e.rotate(b);
      uint64_t r1 = e.rankP1(rb);
      cg.mirrored = g.mirrored[r1];
      cg.base = static_cast<uint64_t>(g.groupOfRank[r1]) * e.p2Placements;
      cg.p1 = cg.mirrored ? e.mirror(rb) : rb;
      return cg;
    }

    static constexpr uint64_t kNoBlocker = ~uint64_t{0};

    /** Visits stored state `index` = (a, b) if still unknown. Returns the child still unknown it
     *  stopped at (see waitForRevisit), else kNoBlocker. `sparse`: the children's group is rarely
     *  in cache (late passes, revisits), so all their indices are computed and prefetched first,
     *  and the misses overlap; in a full pass it is in cache, and each child is ranked only when
     *  the ones before it were won. */
    uint64_t pass(uint64_t index, B a, B b, const ChildGroup& cg, bool sparse) {
      if (table.load(index) != kUnknown) return kNoBlocker;
      const Engine<B>& e = kernel.e_;
      int count = e.generate(a, a | b, moves.data());
      if (count == 0) {
        stats.moveless++;
        return kNoBlocker;
      }
      // A state with a lost child is already won: every loss a pass proves is propagated to all
      // its parents at once (or is about to be, by the thread that proved it), and the parents of
      // init's terminal losses are wins in one, found by init too. What is left to find out is
      // whether every legal child is won: the first unknown child ends the visit.
      if (sparse) childIndices(a, count, cg);
      const B mappedA = sparse ? B{} : childP2(a, cg);
      uint64_t unknown = kNoBlocker;
      for (int i = 0; i < count; i++) {
        const uint64_t child = sparse ? childIndex[i] : childIndexOf(mappedA, cg, moves[2 * i], moves[2 * i + 1]);
        const int v = table.load(child);
        if (v == kUnknown) {
          if (!table.seeksLoss()) return child;
          if (unknown == kNoBlocker) unknown = child;
        } else if (v == kLoss) {
          if (table.prove(index, kWin)) stats.wins++;
          return kNoBlocker;
        }
      }
      if (unknown != kNoBlocker) return unknown;
      if (!table.prove(index, kLoss)) return kNoBlocker;
      stats.losses++;
      // Immediate propagation: every parent (a, b^, P2 to move), b^ -> b by a P2 move
      // (moves are reversible), is won; stored as (rot b^, rot a).
      // The parents lie in other groups all over the table: compute every index and prefetch
      // first, so the cache misses overlap instead of queueing one after another.
      int parents = parentIndices(a, b);
      // With a window, only the parents in it (the others find the loss when visited).
      for (int i = 0; i < parents; i++)
        if (table.contains(parentStates[i].index)) __builtin_prefetch(table.byte(parentStates[i].index), 1);
      for (int i = 0; i < parents; i++) {
        uint64_t p = parentStates[i].index;
        if (table.contains(p) && table.load(p) == kUnknown && table.prove(p, kWin)) stats.wins++;
      }
      return kNoBlocker;
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

    void waitForRevisit(uint64_t index, uint64_t blocker, B a, B b) {
      if (blocker != kNoBlocker) waiting[unitsDone % (kRevisitLag + 1)].push_back({index, blocker, a, b});
    }

    /** A unit is done: the states that waited kRevisitLag units ago are visited again. */
    void endUnit() {
      unitsDone++;
      if (unitsDone > kRevisitLag) revisit(waiting[unitsDone % (kRevisitLag + 1)]);
    }

    /** The end of the kernel call: every state still waiting is visited again, oldest first. */
    void endSweep() {
      for (size_t u = unitsDone > kRevisitLag ? unitsDone - kRevisitLag : 0; u < unitsDone; u++) revisit(waiting[u % (kRevisitLag + 1)]);
      unitsDone = 0;
    }

    /** Most revisits find the child that stopped the first visit still unknown: the visit would
     *  stop there again (the children before it were won, and values never change back), so it is
     *  skipped, for two loads. */
    void revisit(std::vector<Waiting>& states) {
      constexpr size_t kAhead = 16;
      ChildGroup cg;
      bool cgFor = false;  // cg is the child group of states[i - 1].b
      for (size_t i = 0; i < states.size(); i++) {
        if (i + kAhead < states.size()) {
          __builtin_prefetch(table.byte(states[i + kAhead].index));
          __builtin_prefetch(table.byte(states[i + kAhead].blocker));
        }
        const Waiting& s = states[i];
        if (cgFor && !(s.b == states[i - 1].b)) cgFor = false;
        if (table.load(s.blocker) == kUnknown) continue;
        if (!cgFor) {
          cg = childGroup(s.b);
          cgFor = true;
        }
        pass(s.index, s.a, s.b, cg, true);
      }
      states.clear();
    }

    /** childIndex[0..count) for the moves[] of (a, b), whose children live in `cg`. Each is
     *  prefetched: in sparse passes the children's group is rarely in cache, and the misses
     *  then overlap. */
    void childIndices(B a, int count, const ChildGroup& cg) {
      const B mappedA = childP2(a, cg);
      for (int i = 0; i < count; i++) {
        childIndex[i] = childIndexOf(mappedA, cg, moves[2 * i], moves[2 * i + 1]);
        __builtin_prefetch(table.byte(childIndex[i]));
      }
    }

    /** a as the children's P2 before the move: rotated, and mirrored with their group. */
    B childP2(B a, const ChildGroup& cg) const {
      const Engine<B>& e = kernel.e_;
      const B ra = e.rotate(a);
      return cg.mirrored ? e.mirror(ra) : ra;
    }

    /** Stored index of the child after P1's move from -> to; mappedA = childP2(a, cg). */
    uint64_t childIndexOf(B mappedA, const ChildGroup& cg, int from, int to) const {
      const Engine<B>& e = kernel.e_;
      int f = e.n - 1 - from, t = e.n - 1 - to;
      if (cg.mirrored) {
        f = e.mirrorMap[f];
        t = e.mirrorMap[t];
      }
      return cg.base + e.rankP2(cg.p1, mappedA ^ cellBit<B>(f) ^ cellBit<B>(t));
    }

    /** parentStates[] of (a, b): every (a, b^, P2 to move) with b^ -> b by a P2 move (moves are
     *  reversible, so the move generator finds them), stored as (rot b^, rot a) mirrored into its
     *  group; and where that group's placement is its own mirror image, the mirror twin too (both
     *  are stored, with the same value). Returns how many. */
    int parentIndices(B a, B b) {
      const Engine<B>& e = kernel.e_;
      if (parentStamp == 0 || !(b == parentsOf)) {
        parentStamp++;
        parentsOf = b;
        rotParentsOf = e.rotate(b);
        mirRotParentsOf = e.mirror(rotParentsOf);
      }
      int moveCount = e.generate(b, a | b, parentMoves.data());
      // The parent's P2 placement is rot a, or its mirror image where the parent is stored
      // mirrored (a coin toss: selected without a branch); a twin is the other one.
      const B rotA = e.rotate(a), mirRotA = e.mirror(rotA);
      int parents = 0;
      for (int i = 0; i < moveCount; i++) {
        const ParentGroup& pg = parentGroup(parentMoves[2 * i], parentMoves[2 * i + 1]);
        const B pb = pg.mirrored ? mirRotA : rotA;
        parentStates[parents++] = {pg.base + e.rankP2(pg.p1, pb), pg.p1, pb};
        if (pg.selfMirror) {
          const B twin = pg.mirrored ? rotA : mirRotA;
          parentStates[parents++] = {pg.base + e.rankP2(pg.p1, twin), pg.p1, twin};
        }
      }
      return parents;
    }

    /** The parent group of the P2 move from -> to out of `parentsOf`, computed on first use. */
    const ParentGroup& parentGroup(int from, int to) {
      const Engine<B>& e = kernel.e_;
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

    // --- distances (core's SolverKernel.distanceInit / distanceLayer) -------------------------

    /** Distance 0 for a lost state without a legal move (terminal ones included). */
    void distanceInit(uint64_t index, B a, B b, uint8_t* distances) {
      if (table.load(index) != kLoss) return;
      const Engine<B>& e = kernel.e_;
      if (!e.hasWon(1, a, b)) {
        int count = e.generate(a, a | b, moves.data());
        childIndices(a, count, childGroup(b));
        for (int i = 0; i < count; i++)
          if (table.load(childIndex[i]) != kIllegal) return;
      }
      distances[index] = 0;
      stats.losses++;
    }

    /** (a, b) is at distance `depth`: gives depth + 1 to each parent it decides (mirror twins
     *  included: same value, same distance). */
    void pushDistance(B a, B b, int value, int depth, uint8_t* distances) {
      // The parents lie all over both tables: every index first, each prefetched, so that the
      // cache misses overlap.
      int parents = parentIndices(a, b);
      for (int i = 0; i < parents; i++) {
        __builtin_prefetch(&distances[parentStates[i].index], 1);
        __builtin_prefetch(table.byte(parentStates[i].index));
      }
      for (int i = 0; i < parents; i++) {
        const ParentState& p = parentStates[i];
        pushDistanceTo(p.index, p.a, p.b, value, depth, distances);
      }
    }

    /** The parent is stored state `parent`, position (a, b). */
    void pushDistanceTo(uint64_t parent, B a, B b, int value, int depth, uint8_t* distances) {
      if (loadDistance(distances, parent) != kNoDistance) return;
      int parentValue = table.load(parent);
      if (value == kLoss && parentValue == kWin) {
        if (setDistance(distances, parent, depth + 1)) stats.wins++;
      } else if (value == kWin && parentValue == kLoss && childrenWithin(a, b, depth, distances)) {
        if (setDistance(distances, parent, depth + 1)) stats.losses++;
      }
    }

    /** Whether every legal child of (a, b) has a distance of at most `depth`. The children lie in
     *  the group of the state being pushed from, which is in cache. Most calls find a child still
     *  without one (a lost state is asked once per won child that gets a distance before its last
     *  one), so each child is ranked only when the ones before it passed. */
    bool childrenWithin(B a, B b, int depth, const uint8_t* distances) {
      const Engine<B>& e = kernel.e_;
      const int count = e.generate(a, a | b, moves.data());
      const ChildGroup cg = childGroup(b);
      const B mappedA = childP2(a, cg);
      for (int i = 0; i < count; i++) {
        const uint64_t child = childIndexOf(mappedA, cg, moves[2 * i], moves[2 * i + 1]);
        if (loadDistance(distances, child) > depth && table.load(child) != kIllegal) return false;
      }
      return true;
    }
  };

  enum class Mode { Init, Pass, Sparse, DistanceInit, DistanceLayer };

  KernelStats run(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads, Mode mode, uint8_t* distances = nullptr,
                  size_t distanceBytes = 0, int depth = 0, bool descending = false, const TableWindow* window = nullptr) {
    if (window) return runParts<true>(table, bytes, from, to, threads, mode, distances, distanceBytes, depth, descending, window);
    return runParts<false>(table, bytes, from, to, threads, mode, distances, distanceBytes, depth, descending, window);
  }

  template <bool kWindow>
  KernelStats runParts(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads, Mode mode, uint8_t* distances,
                       size_t distanceBytes, int depth, bool descending, const TableWindow* window) {
    const Groups& g = groups();
    const Engine<B>& e = e_;
    uint64_t states = static_cast<uint64_t>(g.rankOf.size()) * e.p2Placements;
    if (window && (mode == Mode::DistanceInit || mode == Mode::DistanceLayer)) throw std::invalid_argument("distances need the whole table");
    const Parts<kWindow> parts = partsOf<kWindow>(table, bytes, window, mode == Mode::Init);
    const bool windowed = kWindow && mode != Mode::Init;
    if ((mode == Mode::DistanceInit || mode == Mode::DistanceLayer) && distanceBytes < states) {
      throw std::invalid_argument("distance table is smaller than the state space");
    }
    uint64_t units = mode == Mode::Pass ? e.p1Placements : g.rankOf.size();  // else groups
    if (to > units || from > to) throw std::invalid_argument("unit range outside the state space");
    // Groups worked on by init and sparse passes lie in one part (the one whose states they are).
    const int groupPart = mode == Mode::Pass || from == to ? 0 : parts.partOfGroup(from);
    if (mode != Mode::Pass && from < to && (groupPart < 0 || parts.partOfGroup(to - 1) != groupPart)) {
      throw std::invalid_argument("groups outside the table's part");
    }
    std::atomic<uint32_t> taken{0};
    std::vector<KernelStats> results(std::max(1, threads));
    auto body = [&](int t) {
      Worker<kWindow> w(*this, g, parts);
      for (uint32_t i; (i = taken.fetch_add(1)) < to - from;) {
        const uint32_t unit = descending ? to - 1 - i : from + i;
        if (mode == Mode::Sparse) {
          // Sparse pass (late passes, few states left): scan group `unit` for unknown states
          // and unrank only those.
          B a = e.unrankP1(g.rankOf[unit]);
          uint64_t first = static_cast<uint64_t>(unit) * e.p2Placements;
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
            const typename Worker<kWindow>::ChildGroup cg = w.childGroup(b);
            if (windowed) {
              const int childPart = parts.partOfGroup(cg.base / e.p2Placements);
              if (childPart < 0 || (parts.crossOnly && childPart == groupPart)) continue;
            }
            w.waitForRevisit(i, w.pass(i, a, b, cg, true), a, b);
          }
          w.endUnit();
          continue;
        }
        if (mode == Mode::DistanceLayer) {
          // The states of group `unit` at distance `depth`: found eight bytes at a time (a word
          // without a byte equal to depth is skipped), then unranked one by one.
          const uint64_t first = static_cast<uint64_t>(unit) * e.p2Placements, end = first + e.p2Placements;
          const uint64_t pattern = 0x0101010101010101ull * static_cast<uint8_t>(depth);
          bool unranked = false;
          B a{};
          for (uint64_t i = first; i < end; i++) {
            if ((i & 7) == 0 && i + 8 <= end) {
              uint64_t x = loadEightBytes(&distances[i]) ^ pattern;
              if (((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull) == 0) {  // no zero byte
                i += 7;
                continue;
              }
            }
            if (loadDistance(distances, i) != depth) continue;
            if (!unranked) {
              a = e.unrankP1(g.rankOf[unit]);
              unranked = true;
            }
            w.pushDistance(a, e.unrankP2(a, i - first), parts.load(i), depth, distances);
          }
          continue;
        }
        if (mode == Mode::Init || mode == Mode::DistanceInit) {
          // Init: the states of group `unit`, in index order.
          const B a = e.unrankP1(g.rankOf[unit]);
          FreePlacements<B> p2(e, a);
          uint64_t index = static_cast<uint64_t>(unit) * e.p2Placements;
          do {
            const B b = p2.placement();
            if (mode == Mode::Init) w.init(index++, a, b);
            else w.distanceInit(index++, a, b, distances);
          } while (p2.next());
          continue;
        }
        // Pass: every stored state whose P2 placement is the unit-th in proof order. Locality:
        // their children all lie in the one group of rot(P2), a few kilobytes of the table that
        // stay in cache; the states themselves lie one per group, a cache miss each, so they are
        // listed first and prefetched a few states ahead of the one being solved.
        B b = e.unrankP1(g.passOrder[unit]);
        const typename Worker<kWindow>::ChildGroup cg = w.childGroup(b);
        const int childPart = windowed ? parts.partOfGroup(cg.base / e.p2Placements) : 0;
        if (childPart < 0) continue;  // not this call's units: no endUnit either
        FreePlacements<B> p1(e, b);
        // Half of the placements are stored under their mirror image and skipped: every one is
        // written and only the others kept, since a branch on that would be mispredicted half the
        // time.
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
          bool keep = g.mirrored[r1] == 0;
          if (windowed) {
            const int part = parts.partOfGroup(group);
            keep = keep && part >= 0 && !(parts.crossOnly && part == childPart);
          }
          states += keep;
        } while (p1.next());
        // Workers take consecutive units, whose states lie next to each other in every group:
        // worker t starts its list t / threads of the way in (and wraps), so that two workers
        // do not write to the same cache lines at the same time.
        const size_t start = states * static_cast<size_t>(t) / static_cast<size_t>(std::max(1, threads));
        const auto at = [&](size_t i) -> const auto& { return w.unitStates[i + start < states ? i + start : i + start - states]; };
        constexpr size_t kAhead = 16;
        for (size_t i = 0; i < std::min(kAhead, states); i++) __builtin_prefetch(parts.byte(at(i).index));
        for (size_t i = 0; i < states; i++) {
          if (i + kAhead < states) __builtin_prefetch(parts.byte(at(i + kAhead).index));
          const auto& s = at(i);
          w.waitForRevisit(s.index, w.pass(s.index, s.p1, b, cg, false), s.p1, b);
        }
        w.endUnit();
      }
      w.endSweep();
      results[t] = w.stats;
    };
    if (threads <= 1) {
      body(0);
    } else {
      // An exception escaping a std::thread body calls std::terminate and takes Node down (a
      // bad_alloc in one worker's buffers): each thread keeps its own, the first is rethrown
      // after every thread has joined, and the binding turns it into a JS error.
      std::vector<std::exception_ptr> failures(threads);
      std::vector<std::thread> pool;
      pool.reserve(threads);
      try {
        for (int t = 0; t < threads; t++) {
          pool.emplace_back([&, t] {
            try {
              body(t);
            } catch (...) {
              failures[t] = std::current_exception();
              taken.store(to - from);  // the others stop taking units
            }
          });
        }
      } catch (...) {
        // A thread could not be started: the started ones must be joined (a joinable std::thread
        // destroyed calls std::terminate) before the error goes up.
        taken.store(to - from);
        for (auto& th : pool) th.join();
        throw;
      }
      for (auto& th : pool) th.join();
      for (const std::exception_ptr& failure : failures)
        if (failure) std::rethrow_exception(failure);
    }
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
};

/** `hardwarePopcount`: the CPU has a popcount instruction the portable code may use. */
inline std::unique_ptr<KernelApi> makeKernel(const Variant& v, const char* name, bool hardwarePopcount = true) {
  if (v.cells <= 64) return std::make_unique<Kernel<uint64_t>>(v, name, hardwarePopcount);
  return std::make_unique<Kernel<U128>>(v, name, hardwarePopcount);
}
