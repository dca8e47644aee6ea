// Portable building blocks that replace pext/pdep in the portable kernel. Kernel-independent.
#pragma once
#include <cstdint>

#include "board_bits.hpp"

namespace cck {

/** Per-byte select tables: position of the j-th set bit of a byte. */
struct ByteSelect {
  uint8_t pos[256][8] = {};
  uint8_t count[256] = {};
  ByteSelect() {
    for (int b = 0; b < 256; b++) {
      int n = 0;
      for (int i = 0; i < 8; i++)
        if (b >> i & 1) pos[b][n++] = static_cast<uint8_t>(i);
      count[b] = static_cast<uint8_t>(n);
    }
  }
  static const ByteSelect& get() {
    static const ByteSelect t;
    return t;
  }
};

/** Software pdep by byte-wise select: deposits the low bits of src onto the set bits of mask. */
inline uint64_t softPdep(uint64_t src, uint64_t mask) {
  const ByteSelect& t = ByteSelect::get();
  uint64_t out = 0;
  int base = 0;  // index (among mask bits) of the first set bit of the current byte
  for (int byte = 0; byte < 8 && src; byte++) {
    unsigned b = static_cast<unsigned>(mask >> (8 * byte)) & 0xff;
    int n = t.count[b];
    // The src bits base .. base+n-1 land in this byte.
    unsigned chunk = static_cast<unsigned>(src) & ((1u << n) - 1);
    while (chunk) {
      int j = __builtin_ctz(chunk);
      chunk &= chunk - 1;
      out |= uint64_t{1} << (8 * byte + t.pos[b][j]);
    }
    src >>= n;
    base += n;
  }
  return out;
}

/** Software pext (the paper's non-BMI2 baseline, used only by the portable kernel's fallbacks). */
inline uint64_t softPext(uint64_t x, uint64_t mask) {
  uint64_t out = 0;
  int i = 0;
  while (mask) {
    int c = __builtin_ctzll(mask);
    out |= ((x >> c) & 1) << i++;
    mask &= mask - 1;
  }
  return out;
}

}  // namespace cck
