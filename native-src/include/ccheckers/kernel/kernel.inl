// KernelApi over BitboardEngine<B> (the native side of core's Engine and SolverKernel):
// fine-grained calls, batches (describe, bench) and the solver's phases. Included after
// engine.inl, in the same kernel namespace, with the bench loops and the solver's parts in the
// order they build on each other:
#include "ccheckers/kernel/state_space.inl"  // groups, proof order, placements among free cells
#include "ccheckers/kernel/bench.inl"        // the benchmark loops of `ccheckers bench`
#include "ccheckers/kernel/table_parts.inl"  // the solver's parts: the table a call works on
#include "ccheckers/kernel/sparse_memo.inl"  // what a sparse pass keeps for the next one
#include "ccheckers/kernel/band_table.inl"   // one band of a band-ordered store
#include "ccheckers/kernel/outbox.inl"       // the messages its visits send to other bands
#include "ccheckers/kernel/state_graph.inl"  // children and parents of a stored state
#include "ccheckers/kernel/pass_worker.inl"  // init and pass visits, revisits
#include "ccheckers/kernel/distances.inl"    // distances to the end, layer by layer
#include "ccheckers/kernel/phases.inl"       // one function per phase, the loop they share
#include "ccheckers/kernel/unknown_lists.inl"  // the unknown states by pass unit, for a listed pass

inline uint32_t moveHash(int from, int to) { return static_cast<uint32_t>(from * 128 + to + 1) * 0x9E3779B1u; }

/** The KernelApi of one code path (this file is compiled once per kernel: bmi2, portable) on
 *  boards held in B: uint64_t up to 64 cells, U128 above. */
template <class B>
class BoardKernel final : public KernelApi {
 public:
  BoardKernel(const Variant& v, const char* kernelName, bool hardwarePopcount) : variant_(v), e_(variant_, hardwarePopcount), name_(kernelName) {}
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

  /** `ccheckers bench`'s loops (bench.inl). */
  BenchResult bench(BenchOp op, const PosWords& pw, uint64_t iterations) override { return runBench(e_, op, pw, iterations); }

  // --- solver ------------------------------------------------------------------------------

  uint64_t solverGroups() override { return space().rankOf.size(); }
  uint64_t solverPassUnits() override { return e_.p1Placements; }
  int solverGroupWeight(uint32_t group) override {
    uint64_t r = space().rankOf.at(group);
    return !variant_.mirrorSymmetric || e_.rankP1(e_.mirror(e_.unrankP1(r))) == r ? 1 : 2;
  }

  KernelStats solverInit(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads) override {
    const StateSpace& g = space();
    const TableParts parts = partsOf(table, bytes);
    checkUnits(from, to, g.rankOf.size());
    return forEachUnit(pool_, to - from, threads, [&](int) { return PassWorker<B, TableParts>(e_, g, parts); },
                       [&](auto& w, uint32_t i, int) { initGroup(w, from + i); });
  }
  /** Pass units [from, to) of the proof order. */
  KernelStats solverPass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads) override {
    const StateSpace& g = space();
    const TableParts parts = partsOf(table, bytes);
    checkUnits(from, to, e_.p1Placements);
    const auto open = openUnits(threads);
    return forEachUnit(pool_, to - from, threads, [&](int t) { return PassWorker<B, TableParts>(e_, g, parts).sharing(open.get(), t, threads); },
                       [&](auto& w, uint32_t i, int t) { passUnit(w, from + i, t, threads); });
  }
  /** Groups [from, to), up or down, visiting only their unknown states; with the memo of the
   *  solve `memoKey` names (SparseMemo), kept from its sparse passes before. */
  KernelStats solverSparsePass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads, bool descending,
                               const SparseMemoKey& memoKey) override {
    const StateSpace& g = space();
    const TableParts parts = partsOf(table, bytes);
    checkUnits(from, to, g.rankOf.size());
    // Offsets in a group are 32-bit. A call that finds the memo in use by another call on this
    // kernel goes without rather than wait.
    std::unique_lock<std::mutex> memoLock(memo_.mutex, std::defer_lock);
    SparseMemo* memo = nullptr;
    if (memoKey.token != 0 && e_.p2Placements <= UINT32_MAX && memoLock.try_lock()) {
      if (memo_.bind(memoKey.token, table, bytes, memoKey.budget, g.rankOf.size())) memo = &memo_;
    }
    return forEachUnit(pool_, to - from, threads, [&](int) { return PassWorker<B, TableParts>(e_, g, parts).remembering(memo); },
                       [&](auto& w, uint32_t i, int) { sparseGroup(w, descending ? to - 1 - i : from + i); });
  }
  ListedUnknown solverListUnknown(uint8_t* table, size_t bytes, int threads, uint64_t budget) override {
    const StateSpace& g = space();
    const TableParts parts = partsOf(table, bytes);
    std::lock_guard<std::mutex> lock(lists_.mutex);
    return lists_.list(pool_, e_, g, parts, table, bytes, threads, budget);
  }
  KernelStats solverListedPass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads) override {
    const StateSpace& g = space();
    const TableParts parts = partsOf(table, bytes);
    checkUnits(from, to, e_.p1Placements);
    std::lock_guard<std::mutex> lock(lists_.mutex);
    if (!lists_.of(table, bytes)) throw std::logic_error("a listed pass over a table whose unknown states were not listed");
    const auto open = openUnits(threads);
    return forEachUnit(pool_, to - from, threads, [&](int t) { return PassWorker<B, TableParts>(e_, g, parts).sharing(open.get(), t, threads); },
                       [&](auto& w, uint32_t i, int t) { listedUnit(w, from + i, t, threads, lists_); });
  }
  uint64_t solverReleaseUnknownLists() override {
    std::lock_guard<std::mutex> lock(lists_.mutex);
    const uint64_t bytes = lists_.bytes();
    lists_.release();
    return bytes;
  }
  uint64_t solverReleaseSparseMemo() override {
    std::lock_guard<std::mutex> lock(memo_.mutex);
    const uint64_t bytes = memo_.used();
    memo_.release();
    return bytes;
  }
  KernelStats solverBand(BandPhase phase, uint8_t* table, size_t bytes, const BandMap& map, const double* input, size_t inputCount, uint32_t from,
                         uint32_t to, int threads, BandOutput& out) override {
    const StateSpace& g = space();
    // UNITS visits look past unknown children for a lost one, and so do the revisits of kept sweeps.
    const BandTable band(table, bytes, map, e_.p2Placements, g.rankOf.size(), phase == BandPhase::Units || phase == BandPhase::UnitsKeep || phase == BandPhase::Revisit);
    std::lock_guard<std::mutex> lock(outboxesMutex_);
    const bool sweeps = phase == BandPhase::UnitsKeep || phase == BandPhase::Revisit;
    if (sweeps && keptBand_ >= 0 && keptBand_ != map.held) {
      // Refused before anything is done: the sweep kept stays for its band.
      throw std::invalid_argument(phase == BandPhase::Revisit ? "band revisit: the waiting states kept are another band's"
                                                              : "band units: the waiting states kept are another band's (revisit them first)");
    }
    std::vector<Outbox>& outboxes = outboxes_;
    prepareOutboxes(outboxes, map.bands, out, threads, input, inputCount);
    const auto worker = [&](int t) { return PassWorker<B, BandTable>(e_, g, band, &outboxes[t]); };
    KernelStats s{};
    switch (phase) {
      case BandPhase::Init:
        checkUnits(from, to, map.slots);
        s = forEachUnit(pool_, to - from, threads, worker, [&](auto& w, uint32_t i, int) { initGroup(w, map.groups[from + i]); });
        break;
      case BandPhase::Units:
      case BandPhase::UnitsKeep: {
        const bool keep = phase == BandPhase::UnitsKeep;
        try {
          for (size_t i = 0; i < inputCount; i++)
            if (!(input[i] >= 0 && input[i] < static_cast<double>(e_.p1Placements)) || input[i] != static_cast<double>(static_cast<uint32_t>(input[i]))) {
              throw std::invalid_argument("band units: a unit outside the proof order");
            }
          if (keep) keepFor(map.held, threads);
          const auto open = openUnits(threads);
          s = forEachUnit(
              pool_, static_cast<uint32_t>(inputCount), threads,
              [&](int t) {
                auto w = worker(t).sharing(open.get(), t, threads);
                return keep ? std::move(w).keeping(&kept_[t]) : std::move(w);
              },
              [&](auto& w, uint32_t i, int t) { passUnit(w, static_cast<uint32_t>(input[i]), t, threads); });
        } catch (...) {
          if (keep) dropKept();  // as the TS kernel: a call that fails drops the sweep kept
          throw;
        }
        break;
      }
      case BandPhase::Revisit:
        // Each thread's kept sweep ended by whichever thread takes it.
        try {
          s = forEachUnit(pool_, static_cast<uint32_t>(kept_.size()), threads, worker, [&](auto& w, uint32_t i, int) { w.revisitKept(kept_[i]); });
        } catch (...) {
          dropKept();
          throw;
        }
        dropKept();
        break;
      case BandPhase::Visit: {
        // Batches of requests are the units (a revisit comes kRevisitLag batches later).
        const uint32_t batches = static_cast<uint32_t>((inputCount + kVisitBatch - 1) / kVisitBatch);
        s = forEachUnit(pool_, batches, threads, worker, [&](auto& w, uint32_t i, int) {
          visitRequests(w, input, i * kVisitBatch, std::min(inputCount, (i + size_t{1}) * kVisitBatch));
        });
        break;
      }
      case BandPhase::Requests:
        checkUnits(from, to, map.slots);
        s = forEachUnit(pool_, to - from, threads, worker, [&](auto& w, uint32_t i, int) { requestsOfSlot(w, from + i); });
        break;
      case BandPhase::Apply: {
        const uint32_t batches = static_cast<uint32_t>((inputCount + kApplyBatch - 1) / kApplyBatch);
        s = forEachUnit(pool_, batches, threads, [](int) { return ApplyWorker{}; }, [&](ApplyWorker& w, uint32_t i, int) {
          applyValues(band, input, i * kApplyBatch, std::min(inputCount, (i + size_t{1}) * kApplyBatch), w.stats);
        });
        break;
      }
    }
    collectOutboxes(outboxes, map.bands, out, threads, pool_);
    return s;
  }
  KernelStats solverBandApplyRuns(uint8_t* table, size_t bytes, const BandMap& map, const uint8_t* runs, size_t from, size_t count, double* state,
                                  int threads, uint64_t& messages) override {
    const BandTable band(table, bytes, map, e_.p2Placements, space().rankOf.size());
    const RunDecoder start = RunDecoder::fromState(state);
    threads = std::max(1, threads);
    const uint64_t states = static_cast<uint64_t>(map.slots) * band.per;
    // A unit a part of the band (applyPartStart): every thread decodes all the runs, whichever
    // part it takes, and all end in the same state; part 0's is kept.
    RunDecoder end;
    size_t next = from;
    const KernelStats s = forEachUnit(pool_, static_cast<uint32_t>(threads), threads, [](int) { return ApplyWorker{}; }, [&](ApplyWorker& w, uint32_t part, int) {
      RunDecoder d = start;
      uint64_t decoded = 0;
      const int p = static_cast<int>(part);
      const size_t stop = applyRuns(band, runs, from, count, d, applyPartStart(states, threads, p), applyPartStart(states, threads, p + 1), w.stats, decoded);
      if (part == 0) {
        end = d;
        next = stop;
        messages = decoded;
      }
    });
    end.toState(state);
    state[kRunNextByte] = static_cast<double>(next);
    return s;
  }
  KernelStats solverDistanceInit(uint8_t* table, size_t bytes, uint8_t* distances, size_t distanceBytes, uint32_t from, uint32_t to,
                                 int threads) override {
    const StateSpace& g = space();
    const TableParts parts = distancePartsOf(table, bytes, distanceBytes, from, to);
    return forEachUnit(pool_, to - from, threads, [&](int) { return DistanceWorker<B>(e_, g, parts); },
                       [&](auto& w, uint32_t i, int) { distanceInitGroup(w, from + i, distances); });
  }
  KernelStats solverDistanceLayer(uint8_t* table, size_t bytes, uint8_t* distances, size_t distanceBytes, int depth, uint32_t from,
                                  uint32_t to, int threads) override {
    if (depth < 0 || depth >= kMaxDistance) throw std::invalid_argument("distance layer outside 0..250");
    const StateSpace& g = space();
    const TableParts parts = distancePartsOf(table, bytes, distanceBytes, from, to);
    return forEachUnit(pool_, to - from, threads, [&](int) { return DistanceWorker<B>(e_, g, parts); },
                       [&](auto& w, uint32_t i, int) { distanceLayerGroup(w, from + i, distances, depth); });
  }

 private:
  Variant variant_;
  BitboardEngine<B> e_;
  const char* name_;
  std::unique_ptr<StateSpace> space_;
  std::mutex spaceMutex_;
  SparseMemo memo_;  // the sparse passes' memo, kept between calls of one solve
  UnknownLists lists_;  // the unknown states by pass unit, kept for the listed passes
  std::vector<Outbox> outboxes_;  // the band calls' workers' messages, kept between calls
  std::mutex outboxesMutex_;
  /** The waiting states UnitsKeep calls kept, by thread, and their band (-1: none). */
  std::vector<typename PassWorker<B, BandTable>::KeptSweep> kept_;
  int64_t keptBand_ = -1;

  /** Room for the kept sweeps of `threads` threads of band `held` (another band's are refused
   *  before the call: a Revisit call ends them first). */
  void keepFor(int32_t held, int threads) {
    keptBand_ = held;
    if (kept_.size() < static_cast<size_t>(std::max(1, threads))) kept_.resize(std::max(1, threads));
  }
  void dropKept() {
    kept_.clear();
    keptBand_ = -1;
  }
  ThreadPool pool_;  // the calls' threads, kept between calls (destroyed first: declared last)

  const StateSpace& space() {
    std::lock_guard<std::mutex> lock(spaceMutex_);
    if (!space_) space_ = buildStateSpace(e_);
    return *space_;
  }

  TableParts partsOf(uint8_t* table, size_t bytes) { return tableParts(table, bytes, e_.p2Placements, space().rankOf.size()); }

  /** A call's open pass units (OpenUnit), one per thread. */
  static std::unique_ptr<PassUnit<B>[]> openUnits(int threads) { return std::make_unique<PassUnit<B>[]>(static_cast<size_t>(std::max(1, threads))); }

  static constexpr size_t kVisitBatch = 256;    // requests per unit of a band visit
  static constexpr size_t kApplyBatch = 16384;  // values per unit of a band apply

  static void checkUnits(uint32_t from, uint32_t to, uint64_t units) {
    if (to > units || from > to) throw std::invalid_argument("unit range outside the state space");
  }

  /** Distances work on the whole table, and a distance table of one byte per stored state. */
  TableParts distancePartsOf(uint8_t* table, size_t bytes, size_t distanceBytes, uint32_t from, uint32_t to) {
    const TableParts parts = partsOf(table, bytes);
    if (distanceBytes < static_cast<uint64_t>(space().rankOf.size()) * e_.p2Placements) {
      throw std::invalid_argument("distance table is smaller than the state space");
    }
    checkUnits(from, to, space().rankOf.size());
    return parts;
  }
};

/** `hardwarePopcount`: the CPU has a popcount instruction the portable code may use. */
inline std::unique_ptr<KernelApi> makeKernel(const Variant& v, const char* name, bool hardwarePopcount = true) {
  if (v.cells <= 64) return std::make_unique<BoardKernel<uint64_t>>(v, name, hardwarePopcount);
  return std::make_unique<BoardKernel<U128>>(v, name, hardwarePopcount);
}
