// C++ self-test of the kernels without Node: test vectors of docs/rules.md and full solves of 7x7 with
// 1 and 2 pieces checked against docs/rules.md section 8. Runs the portable kernel everywhere (also
// under qemu-aarch64) and the BMI2 kernel where the CPU has it; both must agree exactly.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../src/kernel_common.hpp"
#include "ccheckers/jump_magic.hpp"
#include "ccheckers/kernel_api.hpp"

// The band table's helpers (message sort, a band's parts) on their own: they use no engine.
namespace cck {
namespace band_check {
#include "ccheckers/kernel/band_table.inl"
#include "ccheckers/kernel/outbox.inl"
}  // namespace band_check
}  // namespace cck

// The portable kernel's parts on their own: a pass unit's child ranks (StateGraph::childCells)
// against the per-child ranks of the sparse visits, on boards of both word types.
namespace cck {
namespace graph_check {
#include "ccheckers/kernel/engine.inl"
#include "ccheckers/kernel/kernel.inl"
}  // namespace graph_check
}  // namespace cck

using namespace cck;

static int failures = 0;
#define CHECK(cond, ...)                    \
  do {                                      \
    if (!(cond)) {                          \
      std::printf("FAIL %s: ", #cond);      \
      std::printf(__VA_ARGS__);             \
      std::printf("\n");                    \
      failures++;                           \
    }                                       \
  } while (0)

static PosWords position(std::vector<int> p1, std::vector<int> p2, int toMove) {
  PosWords p;
  for (int c : p1) p.p1[c / 32] |= 1u << (c % 32);
  for (int c : p2) p.p2[c / 32] |= 1u << (c % 32);
  p.toMove = toMove;
  return p;
}

static std::set<std::pair<int, int>> movesOf(KernelApi& k, const PosWords& p) {
  uint8_t out[2 * 81 * 12];
  int n = k.moves(p, out);
  std::set<std::pair<int, int>> s;
  for (int i = 0; i < n; i++) s.insert({out[2 * i], out[2 * i + 1]});
  return s;
}

/** sortMessages against std::sort + std::unique: sizes on both sides of the radix threshold (256),
 *  keys of 1 to 53 bits (1 to 5 radix passes; past 2^32), with and without repeats. */
static int checkSortMessages() {
  int checked = 0;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  const auto random = [&x] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  std::vector<size_t> counts(band_check::kSortCounts);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{255}, size_t{256}, size_t{5000}, size_t{100000}}) {
    for (int bits : {1, 8, 11, 12, 30, 33, 40, 53}) {
      for (bool repeats : {false, true}) {
        std::vector<uint64_t> m(n);
        const uint64_t range = uint64_t{1} << bits;
        for (size_t i = 0; i < n; i++) m[i] = random() % (repeats ? std::max<uint64_t>(1, std::min<uint64_t>(range, n / 3 + 1)) : range);
        std::vector<uint64_t> expected = m;
        std::sort(expected.begin(), expected.end());
        expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
        std::vector<uint64_t> keys(n);
        const size_t kept = band_check::sortMessages(m.data(), n, keys.data(), counts.data());
        m.resize(kept);
        CHECK(m == expected, "sortMessages of %zu keys of %d bits (repeats %d)", n, bits, repeats);
        checked++;
      }
    }
  }
  // Outbox::sort and collectOutboxes: 3 workers' outboxes for 5 bands (one empty, one small,
  // repeats within and across workers), merged on 1 and 3 threads, into the caller's buffer (the
  // sorts' keys there too, or not) and into its own; and merges of 1, 2 and 5 runs.
  for (size_t total : {size_t{5000}, size_t{300000}}) {
    for (int workers : {1, 2, 5}) {
      std::vector<band_check::Outbox> outboxes(workers, band_check::Outbox(5));
      std::vector<std::vector<double>> expected(5);
      for (size_t i = 0; i < total; i++) {
        const uint32_t band = random() % 4 == 0 ? 3 : (random() % 2 == 0 ? 0 : 4);
        const uint64_t m = random() % (band == 4 ? (uint64_t{1} << 40) : total / 2);
        outboxes[i % workers].byBand[band].push_back(m);
        expected[band].push_back(static_cast<double>(m));
      }
      outboxes[workers - 1].byBand[1].push_back(7);
      expected[1].push_back(7);
      for (auto& e : expected) {
        std::sort(e.begin(), e.end());
        e.erase(std::unique(e.begin(), e.end()), e.end());
      }
      for (int threads : {1, 3}) {
        // Given a buffer with room for the messages only (too little to code them in it), with
        // room for their sort keys too, none; messages asked for as doubles and coded.
        for (size_t room : {total + 1, 2 * total + 1, size_t{0}})
        for (bool code : {false, true}) {
          const bool given = room > 0;
          std::vector<band_check::Outbox> copy = outboxes;
          std::vector<double> buffer(room, -1);
          BandOutput out;
          out.code = code;
          if (given) {
            out.given = buffer.data();
            out.capacity = buffer.size();
          }
          std::vector<band_check::Outbox> lent = copy;
          band_check::prepareOutboxes(lent, 5, out, workers, nullptr, 0);
          for (int w = 0; w < workers; w++) {
            copy[w].borrowed = lent[w].borrowed;
            copy[w].borrowedRoom = lent[w].borrowedRoom;
            CHECK(lent[w].byBand[0].empty(), "prepareOutboxes empties the outboxes");
            copy[w].sort();
          }
          ThreadPool pool;
          band_check::collectOutboxes(copy, 5, out, threads, pool);
          CHECK(out.inGiven == given, "collectOutboxes into the caller's buffer where it fits");
          if (!code || !given) CHECK(!out.coded, "collectOutboxes gives doubles unless asked to code into a given buffer");
          if (code && room == 2 * total + 1) CHECK(out.coded, "collectOutboxes codes where asked and there is room");
          size_t at = 0;
          std::vector<double> decoded;
          const double* got = out.inGiven ? buffer.data() : out.messages.data();
          for (uint32_t b = 0; b < 5; b++) {
            CHECK(out.counts[b] == static_cast<double>(expected[b].size()), "collectOutboxes count of band %u (%zu messages, %d workers, %d threads)", b, total, workers, threads);
            if (out.coded) {
              // One run for the band, read back by the files' decoder.
              const size_t bytes = static_cast<size_t>(out.codedBytes[b]);
              decoded.assign(expected[b].size() + 1, -1);
              double state[kMessageRunState] = {0, -1, 0, 1, 0, 0};
              decodeMessageRuns(reinterpret_cast<const uint8_t*>(buffer.data()) + at, 0, bytes, decoded.data(), 0, decoded.size(), state);
              CHECK(state[kRunNextByte] == static_cast<double>(bytes) && state[kRunLeft] == 0 && state[kRunNextOut] == static_cast<double>(expected[b].size()),
                    "collectOutboxes codes band %u as one whole run (%zu messages, %d workers)", b, total, workers);
              CHECK(std::equal(expected[b].begin(), expected[b].end(), decoded.begin()), "collectOutboxes coded messages of band %u (%zu messages, %d workers)", b, total, workers);
              at += bytes;
            } else {
              CHECK(std::equal(expected[b].begin(), expected[b].end(), got + at), "collectOutboxes messages of band %u (%zu messages, %d workers, %d threads)", b, total, workers, threads);
              at += expected[b].size();
            }
          }
          CHECK(out.count == at, "collectOutboxes total");
          for (const auto& o : copy)
            for (const auto& v : o.byBand) CHECK(v.empty(), "collectOutboxes empties the outboxes");
          checked++;
        }
      }
    }
  }
  // Coded only where the buffer has 8 bytes a message and 16 a band: 10 messages for 2 bands.
  for (size_t room : {size_t{13}, size_t{14}}) {
    std::vector<band_check::Outbox> outboxes(1, band_check::Outbox(2));
    for (uint64_t m = 0; m < 10; m++) outboxes[0].byBand[m % 2].push_back(1000 * m);
    std::vector<double> buffer(room);
    BandOutput out;
    out.code = true;
    out.given = buffer.data();
    out.capacity = buffer.size();
    ThreadPool pool;
    band_check::collectOutboxes(outboxes, 2, out, 1, pool);
    CHECK(out.coded == (room == 14), "collectOutboxes codes only with room for the worst case (room %zu)", room);
    checked++;
  }
  // The sorts' keys are not lent where the call's input lies.
  {
    std::vector<double> buffer(1000);
    BandOutput out;
    out.given = buffer.data();
    out.capacity = buffer.size();
    std::vector<band_check::Outbox> outboxes;
    band_check::prepareOutboxes(outboxes, 2, out, 2, buffer.data() + 900, 50);
    CHECK(outboxes[0].borrowed == nullptr && outboxes[1].borrowed == nullptr, "no keys lent over the input");
    band_check::prepareOutboxes(outboxes, 2, out, 2, nullptr, 0);
    CHECK(outboxes[0].borrowed != nullptr && outboxes[1].borrowedRoom == 250, "keys lent in the output's second half");
    checked++;
  }
  return checked;
}

// ThreadPool: body(0) of every run on the calling thread, each other t at most once, on threads
// kept between runs, never after the run returned (a run's state is gone then: the sanitizer
// build reports a late call); work taken from a shared counter is all done, by body(0) alone if
// need be; two runs at once (one finds the kept threads busy and starts its own); a run of 1 on
// the calling thread.
static int checkThreadPool() {
  ThreadPool pool;
  int checked = 0;
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 2000; round++) {
    const int n = 1 + round % 4;
    auto calls = std::make_unique<std::vector<std::atomic<int>>>(n);
    auto work = std::make_unique<std::vector<std::atomic<int>>>(64);
    std::atomic<uint32_t> taken{0};
    std::atomic<bool> zeroOnCaller{false};
    // Every third run's body(0) leaves at once (the work is left to the others, or to none of
    // them: then it is not done, which this check allows for those runs only).
    const bool leaves = round % 3 == 0 && n > 1;
    pool.run(n, [&](int t) {
      (*calls)[t]++;
      if (t == 0) zeroOnCaller = std::this_thread::get_id() == caller;
      if (t == 0 && leaves) return;
      for (uint32_t i; (i = taken.fetch_add(1)) < 64;) (*work)[i]++;
    });
    bool once = (*calls)[0] == 1 && zeroOnCaller;
    for (auto& c : *calls) once = once && c <= 1;
    CHECK(once, "ThreadPool run %d of %d threads: body(0) once on the caller, each other t at most once", round, n);
    bool done = true;
    for (auto& w : *work) done = done && (w == 1 || (leaves && w == 0));
    CHECK(done, "ThreadPool run %d of %d threads: the work of a shared counter done once", round, n);
    calls.reset();  // a call after the run would write freed memory
    work.reset();
  }
  CHECK(pool.started() == 3, "ThreadPool keeps its threads (started %zu for runs of up to 4)", pool.started());
  std::thread::id ranOn;
  pool.run(1, [&](int) { ranOn = std::this_thread::get_id(); });
  CHECK(ranOn == caller, "ThreadPool run of 1 on the calling thread");
  std::atomic<int> done{0}, zeros{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; c++) {
    callers.emplace_back([&] {
      for (int r = 0; r < 100; r++) {
        std::atomic<uint32_t> taken{0};
        pool.run(3, [&](int t) {
          zeros += t == 0;
          for (uint32_t i; (i = taken.fetch_add(1)) < 10;) done++;
        });
      }
    });
  }
  for (auto& th : callers) th.join();
  CHECK(done == 2000 && zeros == 200, "ThreadPool runs from two threads at once (%d of 2000 items, %d of 200 runs)", done.load(), zeros.load());
  checked++;
  return checked;
}

// OpenUnit (open_unit.hpp): every state of every unit visited exactly once, by its owner and the
// threads with no unit left; an owner's Listing::close returns only after its helpers' visits (its
// buffer, reused for the next unit, is then scribbled over); helpers take part (a call of one unit
// waits, boundedly, for one).
static int checkOpenUnits() {
  struct Context {
    uint32_t unit = 0;
  };
  using Unit = OpenUnit<int64_t, Context>;
  constexpr size_t kStates = 1000;  // a unit's: 8 chunks
  ThreadPool pool;
  int checked = 0;
  for (int threads : {2, 3, 5}) {
    for (uint32_t units : {1u, 2u, 7u, 40u}) {
      std::vector<std::atomic<int>> visits(units * kStates);
      const std::unique_ptr<Unit[]> open = std::make_unique<Unit[]>(threads);
      std::atomic<uint32_t> taken{0};
      std::atomic<int> helped{0}, early{0}, stale{0};
      pool.run(threads, [&](int t) {
        std::vector<int64_t> states;  // the owner's list, reused unit after unit
        for (;;) {
          Unit& u = open[t];
          // Marked before the unit is taken (passUnit marks it first thing after): a thread that
          // took none after this one took its unit surely waits for it.
          Unit::Listing listing(u);
          const uint32_t i = taken.fetch_add(1);
          if (i >= units) break;
          states.resize(kStates);
          for (size_t s = 0; s < kStates; s++) states[s] = static_cast<int64_t>(i * kStates + s);
          u.open(states.data(), kStates, kStates * t / threads, {i});
          u.takeChunks([&](size_t from, size_t to) {
            for (size_t k = from; k < to; k++) visits[u.at(k)]++;
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (units == 1 && helped == 0 && std::chrono::steady_clock::now() < until) cpuPause();
          });
          listing.close();
          for (size_t s = 0; s < kStates; s++) early += visits[i * kStates + s] != 1;
          std::fill(states.begin(), states.end(), -1);
        }
        helpWithOpenUnits(
            open.get(), threads, t,
            [&](const Unit& u, size_t from, size_t to) {
              // Slow (a visit of real states takes about 20 us a chunk): an owner that did not
              // wait would check, and scribble over, states its helper is still to read.
              const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
              while (std::chrono::steady_clock::now() < until) cpuPause();
              for (size_t k = from; k < to; k++) {
                const int64_t s = u.at(k);
                if (s < 0 || u.context.unit != static_cast<uint64_t>(s) / kStates) {
                  stale++;
                } else {
                  visits[s]++;
                }
              }
            },
            [&](const Unit&) { helped++; });
      });
      bool once = true;
      for (const std::atomic<int>& v : visits) once = once && v == 1;
      CHECK(once, "OpenUnit: %u units on %d threads, every state visited once", units, threads);
      CHECK(early == 0 && stale == 0, "OpenUnit: %u units on %d threads, helpers done before close (%d states not yet visited, %d stale)", units,
            threads, early.load(), stale.load());
      CHECK(units > 1 || helped > 0, "OpenUnit: a call of one unit on %d threads is helped", threads);
      checked++;
    }
  }
  return checked;
}

// The parts of a band the threads of an apply of message runs set: from 0, in whole bytes (4
// states), each after the one before, the last open-ended; every state in exactly one.
static int checkApplyParts() {
  int checked = 0;
  for (uint64_t states : {0ull, 1ull, 3ull, 4ull, 5ull, 100ull, 4095ull, 8191ull, 8192ull, 16384ull, 1000003ull, (1ull << 33) + 5}) {
    for (int threads : {1, 2, 3, 5, 64}) {
      bool ok = band_check::applyPartStart(states, threads, 0) == 0 && band_check::applyPartStart(states, threads, threads) == ~uint64_t{0};
      uint64_t covered = 0;
      for (int t = 0; t < threads; t++) {
        const uint64_t first = band_check::applyPartStart(states, threads, t), next = band_check::applyPartStart(states, threads, t + 1);
        ok = ok && first % 4 == 0 && first <= states && next >= first;
        covered += std::min(next, states) - std::min(first, states);
      }
      CHECK(ok && covered == states, "apply parts of %llu states on %d threads", static_cast<unsigned long long>(states), threads);
    }
  }
  checked++;
  return checked;
}

/** A pass unit's children ranked through childCells (childIndexIn) are the children that
 *  childIndexOf ranks from the rotated, mirrored placement, for random states, in the order
 *  forEachMove gives: 7x7/4 (boards in uint64_t) and 9x9/4 (81 cells, boards in U128, which no
 *  solve here can reach: 2.2e12 positions). Returns the states compared. */
template <class B>
static int checkChildCells(int m, int k, std::vector<int> start) {
  using namespace graph_check;
  const Variant v(m, k, RuleMode::Clean, start);
  const BitboardEngine<B> e(v, true);
  const std::unique_ptr<StateSpace> space = buildStateSpace(e);
  StateGraph<B> graph(e, *space);
  std::vector<B> cells(e.n);
  uint64_t x = 0x2545f4914f6cdd1dull + static_cast<uint64_t>(m);
  const auto random = [&x](uint64_t below) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x % below;
  };
  int states = 0, mirrored = 0, wrong = 0;
  for (int unit = 0; unit < 300; unit++) {
    const B b = e.unrankP1(random(e.p1Placements));
    const ChildGroup<B> cg = graph.childGroup(b);
    mirrored += cg.mirrored;
    graph.childCells(cg, cells.data());
    for (int s = 0; s < 20; s++, states++) {
      const B a = e.unrankP2(b, random(e.p2Placements));
      const B freeA = StateGraph<B>::childP2In(a, cells.data());
      const B mappedA = graph.childP2(a, cg);
      e.forEachMove(a, a | b, [&](int from, int to) {
        wrong += graph.childIndexIn(freeA ^ cells[from], cg, cells.data(), to) != graph.childIndexOf(mappedA, cg, from, to);
        return true;
      });
    }
  }
  CHECK(wrong == 0 && mirrored > 0 && mirrored < 300, "%dx%d/%d: %d children ranked apart by childCells (%d mirrored groups)", m, m, k, wrong, mirrored);
  return states;
}

/** The listing's rising colex unranking (RisingPlacements, unknown_lists.inl) gives the P1 rank of
 *  P2's placement that unrankP2 and rankP1 give, for rising offsets with random gaps in random
 *  groups, on boards in uint64_t and in U128, 1 to 10 pieces. Returns the offsets compared. */
template <class B>
static int checkRisingPlacements(int m, int k, std::vector<int> start) {
  using namespace graph_check;
  const Variant v(m, k, RuleMode::Clean, start);
  const BitboardEngine<B> e(v, true);
  uint64_t x = 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(m * 16 + k);
  const auto random = [&x](uint64_t below) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x % below;
  };
  int offsets = 0, wrong = 0;
  const uint64_t gap = std::max<uint64_t>(2, e.p2Placements / 500);
  for (int group = 0; group < 40; group++) {
    const B a = e.unrankP1(random(e.p1Placements));
    RisingPlacements<B> placements(e, a);
    // Odd groups: offsets across the whole group; even ones: 5,000 close together somewhere in it.
    uint64_t r = group % 2 ? random(gap) : random(e.p2Placements);
    for (int n = 0; r < e.p2Placements && n < 5000; r += 1 + random(group % 2 ? gap : 3), offsets++, n++) {
      wrong += placements.p2Rank(r) != e.rankP1(e.unrankP2(a, r));
    }
  }
  CHECK(wrong == 0, "%dx%d/%d: %d of %d offsets ranked apart by RisingPlacements", m, m, k, wrong, offsets);
  return offsets;
}

int main() {
  int checked = 0;
  checked += checkRisingPlacements<uint64_t>(7, 1, {0}) > 0;
  checked += checkRisingPlacements<uint64_t>(7, 4, {0, 1, 2, 4}) > 0;
  checked += checkRisingPlacements<uint64_t>(4, 6, {0, 1, 2, 3, 4, 5}) > 0;
  checked += checkRisingPlacements<U128>(9, 4, {0, 1, 2, 4}) > 0;
  checked += checkRisingPlacements<U128>(9, 10, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) > 0;
  checked += checkApplyParts();
  checked += checkSortMessages() > 0;
  checked += checkThreadPool();
  checked += checkOpenUnits() > 0;
  checked += checkChildCells<uint64_t>(7, 4, {0, 1, 2, 4}) > 0;
  checked += checkChildCells<U128>(9, 4, {0, 1, 2, 4}) > 0;
  CpuInfo cpu = detectCpu();
  std::printf("cpu: x86=%d bmi2=%d fast=%d vendor=%s family=0x%x\n", cpu.x86, cpu.bmi2, cpu.fastBmi2, cpu.vendor, cpu.family);
  auto kernels = [&](int m, int k, std::vector<int> start) {
    std::vector<std::unique_ptr<KernelApi>> out;
    Variant v(m, k, RuleMode::Clean, start);
    out.push_back(makePortableKernel(v));
    if (cpu.bmi2) {
      auto b = makeBmi2Kernel(v);
      if (b) out.push_back(std::move(b));
    }
    return out;
  };

  // docs/rules.md section 2 test vectors.
  for (auto& k : kernels(7, 1, {0})) {
    auto alone = movesOf(*k, position({29}, {0}, 0));
    std::set<std::pair<int, int>> steps = {{29, 22}, {29, 23}, {29, 28}, {29, 30}, {29, 34}, {29, 35}};
    CHECK(alone == steps, "%s: steps of 29", k->name());
    auto jumps = movesOf(*k, position({29, 40}, {22, 23, 30, 35}, 0));
    for (auto mv : {std::pair<int, int>{29, 15}, {29, 17}, {29, 31}}) CHECK(jumps.count(mv) == 1, "%s: jump 29-%d", k->name(), mv.second);
    CHECK(jumps.count({29, 40}) == 0, "%s: 40 is occupied", k->name());
    checked++;
  }
  for (auto& k : kernels(4, 6, {0, 1, 2, 3, 4, 5})) {
    auto m6 = movesOf(*k, position({6}, {3, 7, 10}, 0));
    std::set<std::pair<int, int>> want = {{6, 1}, {6, 8}, {6, 13}};
    CHECK(m6 == want, "%s: jumps from 6 on 4x4", k->name());
    checked++;
  }

  // The portable kernel's jump tables: a multiplier for every cell of every board of up to 64
  // cells, and the same landing cells as the (over, to) pairs for random occupancies.
  for (int m = 2; m <= 8; m++) {
    Geometry g(m);
    JumpMagic magic(g);
    CHECK(magic.ok, "jump multipliers for the %dx%d board", m, m);
    if (!magic.ok) continue;
    uint64_t seed = 12345 + m, wrong = 0;
    for (int trial = 0; trial < 20000; trial++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t occ = (seed >> 7) & (seed >> 19) & (g.cells == 64 ? ~uint64_t{0} : (uint64_t{1} << g.cells) - 1);
      for (int c = 0; c < g.cells; c++) {
        uint64_t want = 0;
        for (const JumpPair& j : g.jumps[c])
          if ((occ >> j.over & 1) && !(occ >> j.to & 1)) want |= uint64_t{1} << j.to;
        wrong += magic.jumps(c, occ) != want;
      }
    }
    CHECK(wrong == 0, "%llu wrong jump sets on %dx%d", (unsigned long long)wrong, m, m);
    checked++;
  }

  // Full solves, expanded counts (docs/rules.md section 8).
  struct Expected {
    int k;
    std::vector<int> start;
    uint64_t positions, p1Wins, illegal;
  };
  for (const Expected& x : {Expected{1, {0}, 4704, 2304, 96}, Expected{2, {0, 1}, 2542512, 1265851, 10810}}) {
    std::vector<std::vector<uint8_t>> tables;
    for (auto& k : kernels(7, x.k, x.start)) {
      for (int threads : {1, 2}) {
        uint64_t groups = k->solverGroups();
        size_t perGroup = 0;
        {  // C(N - k, k): count P2 placements around the empty P1 set via nextP2
          uint32_t p1[3] = {0, 0, 0}, p2[3] = {0, 0, 0}, next[3];
          k->unrankP1(0, p1);
          k->unrankP2(p1, 0, p2);
          perGroup = 1;
          while (k->nextP2(p1, p2, next)) {
            std::copy(next, next + 3, p2);
            perGroup++;
          }
        }
        uint64_t states = groups * perGroup;
        std::vector<uint8_t> table((states + 3) / 4, 0);
        k->solverInit(table.data(), table.size(), 0, static_cast<uint32_t>(groups), threads);
        int passes = 0;
        for (;;) {
          KernelStats s = k->solverPass(table.data(), table.size(), 0, static_cast<uint32_t>(k->solverPassUnits()), threads);
          CHECK(s.moveless == 0, "moveless states");
          passes++;
          if (s.wins + s.losses == 0 || passes > 200) break;
        }
        uint64_t counts[4] = {0, 0, 0, 0};
        for (uint32_t g = 0; g < groups; g++) {
          int w = k->solverGroupWeight(g);
          for (uint64_t i = g * perGroup; i < (g + 1) * perGroup; i++) counts[(table[i >> 2] >> ((i & 3) * 2)) & 3] += w;
        }
        uint64_t positions = 2 * (counts[0] + counts[1] + counts[2] + counts[3]);
        uint64_t p1Wins = counts[1] + counts[2];
        std::printf("7x7/%d %s threads=%d: positions %llu, P1 wins %llu, draws %llu, illegal %llu, passes %d\n", x.k, k->name(), threads,
                    (unsigned long long)positions, (unsigned long long)p1Wins, (unsigned long long)(2 * counts[0]),
                    (unsigned long long)(2 * counts[3]), passes);
        CHECK(positions == x.positions, "positions");
        CHECK(p1Wins == x.p1Wins, "P1 wins");
        CHECK(counts[0] == 0, "draws");
        CHECK(2 * counts[3] == x.illegal, "illegal");
        tables.push_back(table);
        checked++;
      }
    }
    for (auto& t : tables) CHECK(t == tables[0], "tables differ between kernels or thread counts");
  }
  std::printf("%d kernel checks run, %d failures\n", checked, failures);
  return failures == 0 ? 0 : 1;
}
