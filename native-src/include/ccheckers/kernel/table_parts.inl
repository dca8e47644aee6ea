// The table a solver call works on: the whole 2-bit table, with the value codes and the
// one-byte-wide atomic accesses every phase uses.
// Included after engine.inl, in the same kernel namespace (core's solver-space/table-parts.ts).

enum : int { kUnknown = 0, kLoss = 1, kWin = 2, kIllegal = 3 };
// Distance tables: one byte per stored state (kNoDistance, kLostWithoutDistance, lostCheckedMark and
// kMaxDistance in kernel_api.hpp, shared with the addon and core).
inline bool isLostWithoutDistance(int d) { return d > kMaxDistance && d < kNoDistance; }
inline int loadDistance(const uint8_t* distances, uint64_t index) { return __atomic_load_n(&distances[index], __ATOMIC_RELAXED); }
/** Eight consecutive bytes of a shared table, little-endian, each read as the byte it is: every
 *  concurrent access to the tables is one byte wide (other threads prove and set single bytes
 *  with byte-wide atomics; mixing those with 64-bit atomic loads of the same bytes is undefined
 *  behaviour in C++, whatever x86 and arm64 do with it). */
inline uint64_t loadEightBytes(const uint8_t* p) {
  const auto at = [p](int b) { return static_cast<uint64_t>(__atomic_load_n(&p[b], __ATOMIC_RELAXED)) << (8 * b); };
  return at(0) | at(1) | at(2) | at(3) | at(4) | at(5) | at(6) | at(7);  // unrolled: 8 loads, no loop
}
/** Replaces byte `from` with `to`; true when this call made the change. */
inline bool replaceDistance(uint8_t* distances, uint64_t index, int from, int to) {
  uint8_t expected = static_cast<uint8_t>(from);
  return __atomic_compare_exchange_n(&distances[index], &expected, static_cast<uint8_t>(to), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/**
 * The table a kernel call works on (table-parts.ts in the TS core): the whole table, stored state
 * `index` in byte index / 4 of t. The other table the pass worker works on is a band (BandTable).
 */
struct TableParts {
  static constexpr bool kSends = false;  // never a message (see BandTable)
  uint8_t* t = nullptr;

  /** Every loss reaches all its parents at once: a visit stops at the first unknown child. */
  static constexpr bool seeksLoss() { return false; }
  uint8_t* byte(uint64_t index) const { return t + (index >> 2); }
  void prefetch(uint64_t index) const { __builtin_prefetch(byte(index)); }
  // Children are addressed by their index in the table that holds them (see BandTable): here
  // the stored index itself.
  uint64_t childBase(uint64_t base) const { return base; }
  uint8_t* childByte(uint64_t child) const { return byte(child); }
  int loadChild(uint64_t child) const { return load(child); }
  int load(uint64_t index) const { return (__atomic_load_n(byte(index), __ATOMIC_RELAXED) >> ((index & 3) << 1)) & 3; }
  /** Sets a value where it was UNKNOWN; true when this call made the change. */
  CCK_ALWAYS_INLINE bool prove(uint64_t index, int value) const {
    uint8_t shift = static_cast<uint8_t>((index & 3) << 1);
    uint8_t old = __atomic_fetch_or(byte(index), static_cast<uint8_t>(value << shift), __ATOMIC_RELAXED);
    return ((old >> shift) & 3) == 0;
  }
};

/** The table of a call, checked: its bytes hold the state space. `per`: states per group;
 *  `total`: groups in the state space. */
inline TableParts tableParts(uint8_t* table, size_t bytes, uint64_t per, uint64_t total) {
  if (bytes < (total * per + 3) / 4) throw std::invalid_argument("solver table is smaller than the state space");
  TableParts p;
  p.t = table;
  return p;
}
