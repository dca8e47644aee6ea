// One band of a band-ordered store in memory, and the messages' numbers (core's
// solver-space/band-table.ts): the out-of-core solve's table (packages/solver, band passes); what
// its visits send is kept by outbox.inl. Included after table_parts.inl, in the same kernel
// namespace.
//
// A band holds whole groups (rows of the table) in its own order, `slot` by slot: stored state
// group * per + r is, in the band that holds the group, local state slot * per + r. The driver
// chooses the bands so that holding one is enough to visit every state whose children it holds
// (docs/sharding.md, "Bands of the proof order"); what a visit decides about a state held
// elsewhere, and the wins it propagates to parents held elsewhere, become messages.

/**
 * A message: the number local * 4 + value, exact in a double (local < 2^51). A value (1..3)
 * for the state `local` of the band it is sent to; a request (value 0) names a stored state,
 * by its stored index, for the band that holds its children to visit. Kept as this integer until
 * the call's output, which gives JS doubles or coded runs (BandOutput).
 */
inline uint64_t messageOf(uint64_t index, int value) { return index * 4 + static_cast<uint64_t>(value); }
inline uint64_t messageIndex(double m) { return static_cast<uint64_t>(m) >> 2; }
inline int messageValue(double m) { return static_cast<int>(static_cast<uint64_t>(m) & 3); }
/** An integer from 0 to 2^53 - 1 (what messageOf makes); else the casts above are undefined. */
inline bool isMessage(double m) { return m >= 0 && m < 9007199254740992.0 && m == static_cast<double>(static_cast<uint64_t>(m)); }

/** A stored state's band (the one that holds its group) and its local index there. */
struct StatePlace {
  int32_t band;
  uint64_t local;
};

/** The band in memory as a table (the interface of TableParts the pass worker uses; what it sends
 *  goes to an Outbox). */
struct BandTable {
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
    for (uint32_t b = 0; b < m.bands; b++) {
      if (m.roundOf == nullptr || m.roundOf[b] < 0) throw std::invalid_argument("band map: a band without a round");
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
  /** Where stored state `index` lies: one group lookup for all a visit does with the state (a
   *  lost state's parents are each loaded, proven or sent). */
  StatePlace placeOf(uint64_t index) const {
    const uint64_t g = groupOf(index);
    return {map.bandOf[g], localOf(index, g)};
  }
  bool holds(const StatePlace& place) const { return place.band == map.held; }
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
   * UNITS come later in pass 1 (a later round: a band of the same round may have run already),
   * else -1. That band holds the loss (a unit's children lie in one
   * group, the loss's), is sent it, and applies it before its UNITS visit every state of those
   * units looking past unknown children: it finds each of these parents won and sends the win
   * itself. See leavesWinToUnits.
   */
  int32_t laterUnitsBand(const StatePlace& loss) const { return unitSweep && later(loss.band, map.held) ? loss.band : -1; }
  /** Whether band a's step comes in a later round of the pass than band b's. */
  bool later(int32_t a, int32_t b) const { return map.roundOf[a] > map.roundOf[b]; }
  /**
   * Whether the win of a parent held elsewhere is left to the band of its units (laterUnitsBand)
   * because it arrives as soon from there: at the parent's band's next step either way, when that
   * band comes in a round after the units' band (pass 1) or not after this one (pass 2). A parent
   * held in between, or in the units' band's round, would take the win later from there than from
   * here (at or after its units' visits instead of before its own band's). 7x7/3 in 9 bands: of the 430 M
   * messages of pass 1 (after repeats were dropped), 306 M wins (before) went to parents whose
   * units came later; 134 M of them to parents held before, 1.4 M after.
   */
  bool leavesWinToUnits(int32_t unitsBand, const StatePlace& parent) const {
    return unitsBand >= 0 && (!later(parent.band, map.held) || later(parent.band, unitsBand));
  }
  int loadLocal(uint64_t local) const { return (__atomic_load_n(localByte(local), __ATOMIC_RELAXED) >> ((local & 3) << 1)) & 3; }
  int load(uint64_t index) const { return loadLocal(localOf(index, groupOf(index))); }
  bool proveLocal(uint64_t local, int value) const {
    const uint8_t shift = static_cast<uint8_t>((local & 3) << 1);
    const uint8_t old = __atomic_fetch_or(localByte(local), static_cast<uint8_t>(value << shift), __ATOMIC_RELAXED);
    const bool proven = ((old >> shift) & 3) == 0;
    if (proven) markChangedLine(local);
    return proven;
  }
  /** Marks the line of local state `local` in map.changedLines, where given (see BandMap). Read
   *  first: most proofs fall in lines marked already, and a read does not take the cache line. */
  void markChangedLine(uint64_t local) const {
    if (map.changedLines == nullptr) return;
    const uint64_t line = local / kChangedLineStates;
    uint32_t* word = map.changedLines + (line >> 5);
    const uint32_t bit = uint32_t{1} << (line & 31);
    if ((__atomic_load_n(word, __ATOMIC_RELAXED) & bit) == 0) __atomic_fetch_or(word, bit, __ATOMIC_RELAXED);
  }
  bool prove(uint64_t index, int value) const { return proveLocal(localOf(index, groupOf(index)), value); }
};

/** The first local state of thread t's part of a band of `states` states for `threads` threads
 *  (an apply of message runs; t = threads: past the last): whole bytes of the table, and whole
 *  64-byte stretches of it where each part has a few (cache lines, where the table is aligned);
 *  the last part open-ended (a state past the band is the last thread's to refuse). */
inline uint64_t applyPartStart(uint64_t states, int threads, int t) {
  if (t >= threads) return ~uint64_t{0};
  const uint64_t unit = states >= static_cast<uint64_t>(threads) * 4096 ? 256 : 4;  // states
  return states / unit * static_cast<uint64_t>(t) / static_cast<uint64_t>(threads) * unit;
}
