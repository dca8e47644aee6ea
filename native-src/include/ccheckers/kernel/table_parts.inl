// The table a solver call works on: the whole 2-bit table, or one or two parts of it (a sharded
// store's window), with the value codes and the one-byte-wide atomic accesses every phase uses.
// Included after engine.inl, in the same kernel namespace (core's solver-space/table-parts.ts).

enum : int { kUnknown = 0, kLoss = 1, kWin = 2, kIllegal = 3 };
// Distance tables: one byte per stored state (core's NO_DISTANCE, MAX_DISTANCE).
constexpr int kNoDistance = 255, kMaxDistance = 254;
inline int loadDistance(const uint8_t* distances, uint64_t index) { return __atomic_load_n(&distances[index], __ATOMIC_RELAXED); }
/** Eight consecutive bytes of a shared table, little-endian, each read as the byte it is: every
 *  concurrent access to the tables is one byte wide (other threads prove and set single bytes
 *  with byte-wide atomics; mixing those with 64-bit atomic loads of the same bytes is undefined
 *  behaviour in C++, whatever x86 and arm64 do with it). */
inline uint64_t loadEightBytes(const uint8_t* p) {
  const auto at = [p](int b) { return static_cast<uint64_t>(__atomic_load_n(&p[b], __ATOMIC_RELAXED)) << (8 * b); };
  return at(0) | at(1) | at(2) | at(3) | at(4) | at(5) | at(6) | at(7);  // unrolled: 8 loads, no loop
}
/** Sets a distance where there was none; true when this call made the change. */
inline bool setDistance(uint8_t* distances, uint64_t index, int distance) {
  uint8_t expected = kNoDistance;
  return __atomic_compare_exchange_n(&distances[index], &expected, static_cast<uint8_t>(distance), false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED);
}

/**
 * The table a kernel call works on (core's TableWindow, table-parts.ts in the TS core): part 0 holds
 * the stored states [lo0, hi0) (groups [g0, gEnd0)) from byte byte0 of the table on, in t0;
 * part 1 (empty without one) the same in t1. Without a window (kWindow false: the in-memory
 * solve, compiled without the part tests, which cost it 7%), part 0 is the whole table.
 */
template <bool kWindow>
struct TableParts {
  static constexpr bool kWindowed = kWindow;
  static constexpr bool kSends = false;  // never a message: a state outside the parts is skipped (see BandTable)
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
  void prefetch(uint64_t index) const { __builtin_prefetch(byte(index)); }
  // Children are addressed by their index in the table that holds them (see BandTable): here
  // the stored index itself.
  uint64_t childBase(uint64_t base) const { return base; }
  uint8_t* childByte(uint64_t child) const { return byte(child); }
  int loadChild(uint64_t child) const { return load(child); }
  int load(uint64_t index) const { return (__atomic_load_n(byte(index), __ATOMIC_RELAXED) >> ((index & 3) << 1)) & 3; }
  /** Sets a value where it was UNKNOWN; true when this call made the change. */
  bool prove(uint64_t index, int value) const {
    uint8_t shift = static_cast<uint8_t>((index & 3) << 1);
    uint8_t old = __atomic_fetch_or(byte(index), static_cast<uint8_t>(value << shift), __ATOMIC_RELAXED);
    return ((old >> shift) & 3) == 0;
  }
};

/** The parts of a call, checked: each starts on a byte of the table and fits its bytes. `per`:
 *  states per group; `total`: groups in the state space. */
template <bool kWindow>
TableParts<kWindow> tableParts(uint8_t* table, size_t bytes, const TableWindow* w, bool init, uint64_t per, uint64_t total) {
  TableParts<kWindow> p;
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
