// One band of a band-ordered store in memory, and the messages a band's visits send to the others
// (core's solver-space/band-table.ts): the out-of-core solve's table (packages/solver, band
// passes). Included after table_parts.inl, in the same kernel namespace.
//
// A band holds whole groups (rows of the table) in its own order, `slot` by slot: stored state
// group * per + r is, in the band that holds the group, local state slot * per + r. The driver
// chooses the bands so that holding one is enough to visit every state whose children it holds
// (docs/sharding.md, "Bands of the proof order"); what a visit decides about a state held
// elsewhere, and the wins it propagates to parents held elsewhere, become messages.

/**
 * A message: the number local * 4 + value, exact in a double (local < 2^51). A value (1..3)
 * for the state `local` of the band it is sent to; a request (value 0) names a stored state,
 * by its stored index, for the band that holds its children to visit.
 */
inline double messageOf(uint64_t index, int value) { return static_cast<double>(index * 4 + static_cast<uint64_t>(value)); }
inline uint64_t messageIndex(double m) { return static_cast<uint64_t>(m) >> 2; }
inline int messageValue(double m) { return static_cast<int>(static_cast<uint64_t>(m) & 3); }
/** An integer from 0 to 2^53 - 1 (what messageOf makes); else the casts above are undefined. */
inline bool isMessage(double m) { return m >= 0 && m < 9007199254740992.0 && m == static_cast<double>(static_cast<uint64_t>(m)); }

/** The band in memory as a table (the interface of TableParts the pass worker uses; what it sends
 *  goes to an Outbox). */
struct BandTable {
  static constexpr bool kWindowed = false;
  static constexpr bool kSends = true;
  uint8_t* t = nullptr;
  BandMap map;
  uint64_t per = 1;
  uint64_t perInverse = 0;  // floor((2^64 - 1) / per): the group of an index by a multiply
  /** A UNITS call (pass 1, the bands in order, each after it applied the values sent to it): see
   *  leavesParentsToUnits. Its visits then look past unknown children for a lost one. */
  bool unitSweep = false;

  BandTable(uint8_t* table, size_t bytes, const BandMap& m, uint64_t p2Placements, uint64_t groupCount, bool units = false)
      : t(table), map(m), per(p2Placements), unitSweep(units) {
    perInverse = ~uint64_t{0} / per;
    if (m.held < 0 || static_cast<uint32_t>(m.held) >= m.bands) throw std::invalid_argument("band map: the held band is not one of its bands");
    if (bytes < (static_cast<uint64_t>(m.slots) * per + 3) / 4) throw std::invalid_argument("band table is smaller than its groups");
    // Every group's band and slot: a message is filed under its band (an index out of range
    // would write outside the outboxes).
    for (uint64_t g = 0; g < groupCount; g++) {
      if (m.bandOf[g] < 0 || static_cast<uint32_t>(m.bandOf[g]) >= m.bands || m.slotOf[g] < 0) {
        throw std::invalid_argument("band map: a group without a band and slot");
      }
    }
    for (uint32_t s = 0; s < m.slots; s++) {
      const uint32_t g = m.groups[s];
      if (g >= groupCount || m.bandOf[g] != m.held || m.slotOf[g] != static_cast<int32_t>(s)) {
        throw std::invalid_argument("band map: the held band's groups and the group maps disagree");
      }
    }
  }

  /** index / per: the multiply gives it or one less (index < 2^63). */
  uint64_t groupOf(uint64_t index) const {
    uint64_t q = static_cast<uint64_t>((static_cast<unsigned __int128>(index) * perInverse) >> 64);
    if (index - q * per >= per) q++;
    return q;
  }
  bool holdsGroup(uint64_t group) const { return map.bandOf[group] == map.held; }
  bool contains(uint64_t index) const { return holdsGroup(groupOf(index)); }
  /** The state's index in the band that holds its group. */
  uint64_t localOf(uint64_t index, uint64_t group) const { return static_cast<uint64_t>(map.slotOf[group]) * per + (index - group * per); }
  uint8_t* localByte(uint64_t local) const { return t + (local >> 2); }
  uint8_t* byte(uint64_t index) const { return localByte(localOf(index, groupOf(index))); }
  void prefetch(uint64_t index) const {
    const uint64_t g = groupOf(index);
    if (holdsGroup(g)) __builtin_prefetch(localByte(localOf(index, g)), 1);
  }
  // Children are always held, and addressed by their local index: the child group's base is
  // translated once (a unit's children all lie in one group), not every child's index.
  uint64_t childBase(uint64_t base) const { return static_cast<uint64_t>(map.slotOf[groupOf(base)]) * per; }
  uint8_t* childByte(uint64_t child) const { return localByte(child); }
  int loadChild(uint64_t child) const { return loadLocal(child); }
  /** Outside UNITS every loss reaches all its parents, as a message where not held: a visit
   *  stops at the first unknown child. */
  bool seeksLoss() const { return unitSweep; }
  /**
   * A new loss held elsewhere, in a UNITS call: the band of its parents' units if that band's
   * UNITS come later in pass 1, else -1. That band holds the loss (a unit's children lie in one
   * group, the loss's), is sent it, and applies it before its UNITS visit every state of those
   * units looking past unknown children: it finds each of these parents won and sends the win
   * itself. See leavesWinToUnits.
   */
  int32_t laterUnitsBand(uint64_t loss) const {
    const int32_t band = unitSweep ? map.bandOf[groupOf(loss)] : -1;
    return band > map.held ? band : -1;
  }
  /**
   * Whether the win of a parent held elsewhere is left to the band of its units (laterUnitsBand)
   * because it arrives as soon from there: at the parent's band's next step either way, when that
   * band comes after the units' band (pass 1) or before this one (pass 2). A parent held between
   * the two, or by the units' band itself, would take the win later from there than from here (at
   * or after its units' visits instead of before its own band's). 7x7/3 in 9 bands: of the 430 M
   * messages of pass 1 (after repeats were dropped), 306 M wins (before) went to parents whose
   * units came later; 134 M of them to parents held before, 1.4 M after.
   */
  bool leavesWinToUnits(int32_t unitsBand, uint64_t parent) const {
    if (unitsBand < 0) return false;
    const int32_t band = map.bandOf[groupOf(parent)];
    return band < map.held || band > unitsBand;
  }
  int loadLocal(uint64_t local) const { return (__atomic_load_n(localByte(local), __ATOMIC_RELAXED) >> ((local & 3) << 1)) & 3; }
  int load(uint64_t index) const { return loadLocal(localOf(index, groupOf(index))); }
  bool proveLocal(uint64_t local, int value) const {
    const uint8_t shift = static_cast<uint8_t>((local & 3) << 1);
    const uint8_t old = __atomic_fetch_or(localByte(local), static_cast<uint8_t>(value << shift), __ATOMIC_RELAXED);
    return ((old >> shift) & 3) == 0;
  }
  bool prove(uint64_t index, int value) const { return proveLocal(localOf(index, groupOf(index)), value); }
};

/** The messages of one worker, by the band they are for. */
struct Outbox {
  std::vector<std::vector<double>> byBand;
  explicit Outbox(uint32_t bands = 0) : byBand(bands) {}
  /** The value of a state held elsewhere, to the band that holds it. */
  void sendValue(const BandTable& table, uint64_t index, int value) {
    const uint64_t g = table.groupOf(index);
    byBand[table.map.bandOf[g]].push_back(messageOf(table.localOf(index, g), value));
  }
  /** A request to visit stored state `index` again, to `band` (that of its children). */
  void sendRequest(uint32_t band, uint64_t index) { byBand[band].push_back(messageOf(index, 0)); }
};

/** The radix sort's digits: up to 11 bits each (2,048 counts, in L1), up to 5 (55 bits, more
 *  than the 53 of any message). */
constexpr int kMaxDigitBits = 11, kMaxDigits = 5;
constexpr size_t kSortCounts = static_cast<size_t>(kMaxDigits) << kMaxDigitBits;

/**
 * Sorts messages m[0, n) ascending and drops repeats (message combining: a state sent the same
 * value by several visits is sent it once, and the file of a run of sorted messages codes each as
 * its distance from the one before, about a byte instead of 8). Returns the count kept, in the
 * front of m. A radix sort on the integers (digits of up to 11 bits, as few as the keys' highest
 * bit needs: a band's local indices times 4, or stored indices times 4 for requests), through
 * `keys` (n of them) and m's own memory; `counts` holds kSortCounts. Allocates nothing.
 */
inline size_t sortMessages(double* m, size_t n, uint64_t* keys, size_t* counts) {
  if (n < 2) return n;
  // m's memory holds integers between passes: read and written through memcpy (no aliasing).
  const auto loadKey = [m](size_t i) {
    uint64_t k;
    std::memcpy(&k, m + i, sizeof k);
    return k;
  };
  const auto storeKey = [m](size_t i, uint64_t k) { std::memcpy(m + i, &k, sizeof k); };
  bool inKeys = true;  // where the keys are after the passes so far
  uint64_t bitsUsed = 0;
  for (size_t i = 0; i < n; i++) bitsUsed |= static_cast<uint64_t>(m[i]);
  const int bits = bitsUsed == 0 ? 1 : 64 - __builtin_clzll(bitsUsed);
  const int digits = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
  if (n < 256 || digits > kMaxDigits) {
    // Few keys (or, never from messageOf, more than 55 bits): a comparison sort.
    for (size_t i = 0; i < n; i++) keys[i] = static_cast<uint64_t>(m[i]);
    std::sort(keys, keys + n);
  } else {
    // Every digit's counts in the one read that converts the keys, then one scatter per digit
    // that is not the same in all keys.
    const int width = (bits + digits - 1) / digits;
    const uint64_t mask = (uint64_t{1} << width) - 1;
    size_t* bucket[kMaxDigits];
    for (int d = 0; d < digits; d++) {
      bucket[d] = counts + (static_cast<size_t>(d) << kMaxDigitBits);
      std::fill(bucket[d], bucket[d] + mask + 1, size_t{0});
    }
    for (size_t i = 0; i < n; i++) {
      const uint64_t k = keys[i] = static_cast<uint64_t>(m[i]);
      for (int d = 0; d < digits; d++) bucket[d][(k >> (d * width)) & mask]++;
    }
    for (int d = 0; d < digits; d++) {
      const int shift = d * width;
      if (bucket[d][(keys[0] >> shift) & mask] == n) continue;  // the same digit everywhere
      size_t at = 0;
      for (uint64_t v = 0; v <= mask; v++) at += std::exchange(bucket[d][v], at);
      if (inKeys) {
        for (size_t i = 0; i < n; i++) storeKey(bucket[d][(keys[i] >> shift) & mask]++, keys[i]);
      } else {
        for (size_t i = 0; i < n; i++) {
          const uint64_t k = loadKey(i);
          keys[bucket[d][(k >> shift) & mask]++] = k;
        }
      }
      inKeys = !inKeys;
    }
  }
  // Repeats dropped, back to doubles in m (in place when the keys are there: kept <= read).
  size_t kept = 0;
  uint64_t last = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t k = inKeys ? keys[i] : loadKey(i);
    if (i > 0 && k == last) continue;
    m[kept++] = static_cast<double>(k);
    last = k;
  }
  return kept;
}

/** What collectOutboxes' sorts use, kept between calls (like the outboxes): a key for every
 *  message of a call whose output buffer has no room for them (band b's sort uses the keys from
 *  its first message's place on), and the digit counts of each sorting thread. */
struct SortScratch {
  std::vector<uint64_t> keys;
  std::vector<std::vector<size_t>> counts;
};

/** The workers' outboxes as one output, band by band, each band's messages sorted and without
 *  repeats (sortMessages; the bands sorted on up to `threads` threads of `pool`). The outboxes are emptied
 *  and keep their memory for the next call (fresh vectors each call cost a page fault per 4 KiB
 *  of messages: 7x7/3 spent more time in them than in its visits). The sorts' memory is one key
 *  per message, whatever the threads: the output buffer's free part where it has room. */
inline void collectOutboxes(std::vector<Outbox>& outboxes, uint32_t bands, BandOutput& out, int threads, SortScratch& scratch, ThreadPool& pool) {
  out.counts.assign(bands, 0);
  std::vector<size_t> start(bands + 1, 0);
  for (uint32_t b = 0; b < bands; b++) {
    size_t size = 0;
    for (const Outbox& o : outboxes) size += o.byBand[b].size();
    start[b + 1] = start[b] + size;
  }
  const size_t total = start[bands];
  out.inGiven = out.given != nullptr && total <= out.capacity;
  double* to = out.given;
  if (!out.inGiven) {
    out.messages.resize(total);
    to = out.messages.data();
  }
  const int sorters = total < (size_t{1} << 12) ? 1 : static_cast<int>(std::min<uint32_t>(static_cast<uint32_t>(std::max(1, threads)), bands));
  // The keys: in the caller's buffer past the messages where it holds them twice over (no memory
  // of the kernel's own: band-solve.ts sizes its calls so), else in the scratch. All the sorts'
  // memory is taken here, on the calling thread: a bad_alloc in a sorting thread would end the
  // process (std::terminate); here it is the call's error.
  uint64_t* keys = nullptr;
  if (out.inGiven && out.capacity - total >= total) {
    keys = reinterpret_cast<uint64_t*>(out.given + total);
  } else {
    if (scratch.keys.size() < total) scratch.keys.resize(total);
    keys = scratch.keys.data();
  }
  if (scratch.counts.size() < static_cast<size_t>(sorters)) scratch.counts.resize(sorters);
  for (int t = 0; t < sorters; t++) scratch.counts[t].resize(kSortCounts);
  std::vector<size_t> kept(bands, 0);
  std::atomic<uint32_t> next{0};
  const auto sortBands = [&](int t) {
    for (uint32_t b; (b = next.fetch_add(1)) < bands;) {
      double* at = to + start[b];
      for (Outbox& o : outboxes) {
        at = std::copy(o.byBand[b].begin(), o.byBand[b].end(), at);
        o.byBand[b].clear();
      }
      kept[b] = sortMessages(to + start[b], start[b + 1] - start[b], keys + start[b], scratch.counts[t].data());
    }
  };
  pool.run(sorters, sortBands);
  // The bands' kept messages moved together, in band order.
  size_t count = 0;
  for (uint32_t b = 0; b < bands; b++) {
    std::memmove(to + count, to + start[b], kept[b] * sizeof(double));
    out.counts[b] = static_cast<double>(kept[b]);
    count += kept[b];
  }
  out.count = count;
}
