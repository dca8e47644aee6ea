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

  BandTable(uint8_t* table, size_t bytes, const BandMap& m, uint64_t p2Placements, uint64_t groupCount) : t(table), map(m), per(p2Placements) {
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
  bool seeksLoss() const { return false; }  // every loss reaches all its parents, as a message where not held
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

/** The workers' outboxes as one output, band by band; they are emptied and keep their memory
 *  for the next call (fresh vectors each call cost a page fault per 4 KiB of messages: 7x7/3
 *  spent more time in them than in its visits). */
inline void collectOutboxes(std::vector<Outbox>& outboxes, uint32_t bands, BandOutput& out) {
  out.counts.assign(bands, 0);
  size_t total = 0;
  for (const Outbox& o : outboxes)
    for (uint32_t b = 0; b < bands; b++) total += o.byBand[b].size();
  out.count = total;
  out.inGiven = out.given != nullptr && total <= out.capacity;
  double* to = out.given;
  if (!out.inGiven) {
    out.messages.resize(total);
    to = out.messages.data();
  }
  for (uint32_t b = 0; b < bands; b++) {
    for (Outbox& o : outboxes) {
      to = std::copy(o.byBand[b].begin(), o.byBand[b].end(), to);
      out.counts[b] += static_cast<double>(o.byBand[b].size());
      o.byBand[b].clear();
    }
  }
}
