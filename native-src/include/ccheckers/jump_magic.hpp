// Single jumps without pext, for the portable kernel on boards of up to 64 cells. A jump from
// cell c goes over one of its (at most six) neighbours onto the cell beyond. A multiply by a
// per-cell constant gathers the occupied ones of those neighbours into a small index (the
// "magic" multiplier chess engines index their sliding attacks with), and a table at that index
// holds the cells beyond them: with the empty ones kept, the landing cells of every single jump.
// About as few instructions as pext + pdep (a multiply, two shifts, a load), and no loop over the
// directions. Kernel-independent: built once per geometry.
#pragma once
#include <cstdint>
#include <vector>

#include "geometry.hpp"

namespace cck {

class JumpMagic {
 public:
  /** Usable when every cell got a multiplier (always so for the boards of docs/rules.md; checked). */
  bool ok = false;

  explicit JumpMagic(const Geometry& g) {
    if (g.cells > 64) return;
    cells_.resize(g.cells);
    ok = true;
    for (int c = 0; c < g.cells; c++) ok = build(g.jumps[c], cells_[c]) && ok;
  }

  /** Landing cells of every single jump from `at` for occupancy `occ`. */
  uint64_t jumps(int at, uint64_t occ) const {
    const Cell& c = cells_[at];
    return landing_[c.offset + (((occ & c.overMask) * c.magic) >> c.shift)] & ~occ;
  }

 private:
  struct Cell {
    uint64_t overMask = 0, magic = 0;
    uint32_t offset = 0;
    uint8_t shift = 63;
  };
  std::vector<Cell> cells_;
  std::vector<uint64_t> landing_;

  /** Index of the set of jumped-over cells `over` (a subset of cell.overMask). */
  static uint64_t indexOf(uint64_t over, const Cell& cell) { return (over * cell.magic) >> cell.shift; }

  /** Finds a multiplier that maps the 2^k subsets of the k cells jumped over to distinct k-bit
   *  indices, and fills the cell's table. */
  bool build(const std::vector<JumpPair>& pairs, Cell& cell) {
    const int k = static_cast<int>(pairs.size());
    cell.offset = static_cast<uint32_t>(landing_.size());
    cell.overMask = 0;
    for (const JumpPair& p : pairs) cell.overMask |= uint64_t{1} << p.over;
    cell.shift = static_cast<uint8_t>(k == 0 ? 63 : 64 - k);
    landing_.resize(landing_.size() + (size_t{1} << k), 0);
    if (k == 0) return true;  // index 0, no landing cells
    // First guess: move each run of adjacent cells, in order, to the top k bits with one term
    // each (the j-th cell lands on bit 64 - k + j); then a fixed pseudo-random sequence.
    uint64_t guess = 0;
    int j = 0;
    for (int bit = 0; bit < 64; bit++) {
      if (!(cell.overMask >> bit & 1)) continue;
      const int lift = 64 - k + j - bit;
      if (lift < 0) guess = 0;  // would need a right shift: no guess (fails the check)
      else if (bit == 0 || !(cell.overMask >> (bit - 1) & 1)) guess += uint64_t{1} << lift;
      j++;
    }
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    auto next = [&seed] {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      return seed;
    };
    for (int attempt = 0; attempt < 1000000; attempt++) {
      cell.magic = attempt == 0 ? guess : next() & next() & next();
      if (fill(pairs, cell)) return true;
    }
    return false;
  }

  /** Fills the table for cell.magic; false when two subsets share an index. */
  bool fill(const std::vector<JumpPair>& pairs, const Cell& cell) {
    const size_t size = size_t{1} << pairs.size();
    std::vector<uint8_t> seen(size, 0);
    for (uint64_t s = 0; s < size; s++) {  // s: bit i set when the i-th pair's cell is occupied
      uint64_t over = 0, landing = 0;
      for (size_t i = 0; i < pairs.size(); i++) {
        if (!(s >> i & 1)) continue;
        over |= uint64_t{1} << pairs[i].over;
        landing |= uint64_t{1} << pairs[i].to;
      }
      const uint64_t index = indexOf(over, cell);
      if (index >= size || seen[index]) return false;
      seen[index] = 1;
      landing_[cell.offset + index] = landing;
    }
    return true;
  }
};

}  // namespace cck
