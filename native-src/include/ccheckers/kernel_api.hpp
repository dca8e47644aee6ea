// The interface every compiled kernel (bmi2, portable) exposes to the binding and the self-test.
// Coarse-grained entry points (describe, bench, solver init/pass) do a whole batch per call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "geometry.hpp"

namespace cck {

/** A position as the TS core holds it: three 32-bit words per player. */
struct PosWords {
  uint32_t p1[3] = {0, 0, 0};
  uint32_t p2[3] = {0, 0, 0};
  int toMove = 0;
};

struct BenchResult {
  double nanoseconds = 0;
  uint32_t checksum = 0;
};

struct KernelStats {
  uint64_t wins = 0, losses = 0, illegal = 0, terminal = 0, moveless = 0;
};

/** The solve whose sparse passes keep a memo (core's SparseMemoKey): token 0 keeps none; budget:
 *  the most bytes the memo may hold. */
struct SparseMemoKey {
  uint64_t token = 0;
  uint64_t budget = 0;
};

/** What solverListUnknown found (core's ListedUnknown): the unknown states, the bytes their lists
 *  take, and whether they were listed (they fit the budget). */
struct ListedUnknown {
  uint64_t states = 0;
  uint64_t bytes = 0;
  bool listed = false;
};

/** Benchmark operations, in the order of core's BENCH_OPS. */
enum class BenchOp { Winner, Successors, RankP1, RankP2, UnrankP1, UnrankP2, IncrementP2 };
constexpr int kBenchSamples = 4096;  // = BENCH_SAMPLES in core (the addon exports both; a test compares)

/** How many units later a pass visits again the states whose visit stopped at an unknown child
 *  (core's REVISIT_LAG in solver-space/state-space.ts: both kernels must agree, and single-threaded
 *  solves agree pass by pass only then; the addon exports it and a test compares). */
constexpr size_t kRevisitLag = 64;

// Distance tables: one byte per stored state (core's NO_DISTANCE, MAX_DISTANCE). While they are
// laid, a lost state without a distance holds kLostWithoutDistance, or the mark of the layer that
// last found one of its children still without one (lostCheckedMark): a push to a parent then
// reads one byte, not the parent's value too, and a lost parent is checked once a layer. A
// checkpoint of the distances holds the marks, so both kernels must agree on them (the addon
// exports them for a test); a finished table holds none.
constexpr int kNoDistance = 255, kLostWithoutDistance = 254, kMaxDistance = 251;
/** The mark of a lost state found undecided in layer `depth`. Two marks in turn: each layer's
 *  scan clears the next layer's mark, which no thread sets meanwhile, so a layer never takes a
 *  mark an earlier layer set for one of its own. (Only won states check, at odd depths, so 252 is
 *  the one set; the scheme does not rely on it.) */
constexpr int lostCheckedMark(int depth) { return 253 - (depth & 1); }

/** Fields written per position by describe() (see core's describe.ts for their meaning). */
constexpr int kDescribeFields = 12;

/**
 * One band of a band-ordered store (the out-of-core solve's band passes; core's BandMap): which
 * band holds every group, and where; the band in memory, `held`, holds groups[0, slots) (slot ->
 * group). Stored state group * per + r is, in the band that holds the group, local state
 * slotOf[group] * per + r.
 */
struct BandMap {
  const int32_t* bandOf = nullptr;
  const int32_t* slotOf = nullptr;
  /** The round of every band in a pass (bands stepped at once share one; store/band-schedule.ts):
   *  what comes later in the pass is a later round, not a higher band. */
  const int32_t* roundOf = nullptr;
  const uint32_t* groups = nullptr;
  uint32_t slots = 0;
  int32_t held = 0;
  uint32_t bands = 0;
  /** Where given, the call marks each line of kChangedLineStates states (64 bytes of the held band)
   *  in which it proves a state: bit (L & 31) of changedLines[L >> 5] for line L. A shared step's
   *  part then publishes its proofs at the cost of the lines they touch, not of its whole copy
   *  (core's ProofExchange). At least changedLineWords(bytes) words. */
  uint32_t* changedLines = nullptr;
};

/** States in a line of BandMap::changedLines: 64 bytes of a band, 16 of its 32-bit words. */
constexpr uint64_t kChangedLineStates = 256;
/** The words of a band's changed-lines bitmap: a bit per line of its `bytes`. */
inline uint64_t changedLineWords(uint64_t bytes) { return (bytes + 64 * 32 - 1) / (64 * 32); }

/** What a band call does (core's BandPhase): init the held band's slots [from, to); visit every
 *  state of the units `input` (positions in the proof order, whose children the band holds; pass
 *  1 only, the bands in order, each after applying the values sent to it: leavesParentsToUnits);
 *  visit the states requests `input` name; list a request for each unknown state of slots
 *  [from, to) to the band holding its children; apply the values `input` sent to the band;
 *  UnitsKeep: as Units, the states still waiting for their revisit at the end kept for the
 *  kernel's next UnitsKeep call on the same band, one sweep over the calls; Revisit: those kept
 *  states visited again (the end of that sweep). */
enum class BandPhase { Init, Units, Visit, Requests, Apply, UnitsKeep, Revisit };

/**
 * A band call's messages, band by band: counts[b] messages for band b, in band order, each band's
 * sorted ascending and without repeats. They are written to `given` (the caller's buffer of
 * `capacity` doubles) where they fit before the repeats go, else to `messages`; `inGiven` says which.
 * The second half of `given` lends the sorts their keys (garbage after), unless the call's input
 * lies in `given`.
 *
 * With `code` (a caller that only writes them to message files), each band's messages are given
 * as one run of message_runs.hpp instead, coded in the bytes of `given`, band after band:
 * codedBytes[b] bytes for band b, `coded` true and `count` the bytes in all. Where `given` has not
 * the room (8 bytes a message and 16 a band, before the repeats go), they come as doubles.
 */
struct BandOutput {
  double* given = nullptr;
  size_t capacity = 0;
  bool code = false;
  bool inGiven = false;
  bool coded = false;
  size_t count = 0;
  std::vector<double> messages;
  std::vector<double> counts;
  std::vector<double> codedBytes;
};

class KernelApi {
 public:
  virtual ~KernelApi() = default;
  virtual const char* name() const = 0;
  /** Pseudo-moves (legality ignored) and legal moves as (from, to) byte pairs; return the count. */
  virtual int moves(const PosWords& p, uint8_t* out) = 0;
  virtual int legalMoves(const PosWords& p, uint8_t* out) = 0;
  virtual bool hasWon(int player, const PosWords& p) = 0;
  virtual bool isIllegal(const PosWords& p) = 0;
  virtual bool isTerminal(const PosWords& p) = 0;
  virtual uint64_t rankP1(const uint32_t* p1) = 0;
  virtual void unrankP1(uint64_t rank, uint32_t* out) = 0;
  virtual uint64_t rankP2(const uint32_t* p1, const uint32_t* p2) = 0;
  virtual void unrankP2(const uint32_t* p1, uint64_t rank, uint32_t* out) = 0;
  virtual bool nextP2(const uint32_t* p1, const uint32_t* p2, uint32_t* out) = 0;
  virtual void mirror(const uint32_t* set, uint32_t* out) = 0;
  virtual void rotate(const uint32_t* set, uint32_t* out) = 0;
  virtual void canonical(const PosWords& p, PosWords& out) = 0;
  /** For `count` positions of 7 words (p1[3], p2[3], toMove): kDescribeFields doubles each. */
  virtual void describe(const uint32_t* words, size_t count, double* out) = 0;
  virtual BenchResult bench(BenchOp op, const PosWords& p, uint64_t iterations) = 0;
  /** Solver init over groups [from, to) of the table on `threads` native threads. */
  virtual KernelStats solverInit(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads) = 0;
  /** A pass over the P2 placements [from, to) of the proof order. */
  virtual KernelStats solverPass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads) = 0;
  /** The same over groups [from, to), visiting only states still unknown (for late passes); a
   *  memo key names the solve whose sparse passes keep what they learn for the next (kernel/sparse_memo.inl). */
  virtual KernelStats solverSparsePass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads, bool descending,
                                       const SparseMemoKey& memoKey) = 0;
  /** Drops the sparse passes' memo; returns the bytes it held. */
  virtual uint64_t solverReleaseSparseMemo() = 0;
  /** Lists the table's unknown states by pass unit, within `budget` bytes (kernel/unknown_lists.inl),
   *  for the listed passes over this table that follow; lists made before are dropped. */
  virtual ListedUnknown solverListUnknown(uint8_t* table, size_t bytes, int threads, uint64_t budget) = 0;
  /** The pass units [from, to) of the proof order, as solverPass, visiting only the states listed. */
  virtual KernelStats solverListedPass(uint8_t* table, size_t bytes, uint32_t from, uint32_t to, int threads) = 0;
  /** Drops the lists; returns the bytes they held. */
  virtual uint64_t solverReleaseUnknownLists() = 0;
  /** Distance tables (one byte per stored state, see core's SolverKernel.distanceInit and
   *  distanceLayer) over a solved table, on groups [from, to). */
  virtual KernelStats solverDistanceInit(uint8_t* table, size_t bytes, uint8_t* distances, size_t distanceBytes, uint32_t from,
                                         uint32_t to, int threads) = 0;
  virtual KernelStats solverDistanceLayer(uint8_t* table, size_t bytes, uint8_t* distances, size_t distanceBytes, int depth,
                                          uint32_t from, uint32_t to, int threads) = 0;
  /** A band call (see BandPhase) on the held band `table`: `input` holds its units, requests or
   *  values; [from, to) are the slots of Init and Requests. Messages to other bands go to `out`. */
  virtual KernelStats solverBand(BandPhase phase, uint8_t* table, size_t bytes, const BandMap& map, const double* input, size_t inputCount,
                                 uint32_t from, uint32_t to, int threads, BandOutput& out) = 0;
  /** Apply (BandPhase) of the values coded in runs[from, count) (message_runs.hpp), as files hold
   *  them: `state` (kMessageRunState numbers) carries a run and a number across the pieces of a
   *  file, and is left where these bytes end (kRunNextByte set). Returns the counts, and in
   *  `messages` the values decoded. */
  virtual KernelStats solverBandApplyRuns(uint8_t* table, size_t bytes, const BandMap& map, const uint8_t* runs, size_t from, size_t count,
                                          double* state, int threads, uint64_t& messages) = 0;
  virtual uint64_t solverGroups() = 0;
  /** Work units of solverPass: P2 placements, C(N, k) of them (solverInit works on groups). */
  virtual uint64_t solverPassUnits() = 0;
  /** 1 or 2: how many P1 placements (mirror images) group g stands for. */
  virtual int solverGroupWeight(uint32_t g) = 0;
};

/** Kernel factories; makeBmi2Kernel returns nullptr where it was not compiled (non-x86). */
std::unique_ptr<KernelApi> makePortableKernel(const Variant& v);
/** The portable kernel without the popcount instruction, whatever this CPU has (tests: the path
 *  of x86 CPUs without popcnt). makePortableKernel uses the instruction where the CPU has it. */
std::unique_ptr<KernelApi> makeBaselinePortableKernel(const Variant& v);
std::unique_ptr<KernelApi> makeBmi2Kernel(const Variant& v);

/** CPU features relevant to the kernel choice. */
struct CpuInfo {
  bool x86 = false;
  bool bmi2 = false;       // the instructions exist
  bool fastBmi2 = false;   // and are not microcoded (AMD family 0x17)
  bool popcnt = false;     // a popcount instruction (x86 popcnt; always on arm64)
  unsigned family = 0;
  char vendor[13] = {};
};
CpuInfo detectCpu();

}  // namespace cck
