// Board words: one uint64_t for boards of up to 64 cells, U128 (two words) for 81 cells.
// Generic helpers over both, used by every kernel. Plain inline functions (default target):
// kernels compiled for BMI2 inline them, and their standalone copies stay baseline x86-64.
#pragma once
#include <cstdint>

// For the few hot functions GCC judges too big to inline into the solver's loops.
#if defined(__GNUC__)
#define CCK_ALWAYS_INLINE __attribute__((always_inline)) inline
#define CCK_ALWAYS_INLINE_LAMBDA __attribute__((always_inline))  // after a lambda's parameters
#else
#define CCK_ALWAYS_INLINE inline
#define CCK_ALWAYS_INLINE_LAMBDA
#endif

namespace cck {

struct U128 {
  uint64_t lo = 0, hi = 0;
  constexpr U128() = default;
  constexpr U128(uint64_t l, uint64_t h) : lo(l), hi(h) {}
  friend constexpr U128 operator&(U128 a, U128 b) { return {a.lo & b.lo, a.hi & b.hi}; }
  friend constexpr U128 operator|(U128 a, U128 b) { return {a.lo | b.lo, a.hi | b.hi}; }
  friend constexpr U128 operator^(U128 a, U128 b) { return {a.lo ^ b.lo, a.hi ^ b.hi}; }
  friend constexpr U128 operator~(U128 a) { return {~a.lo, ~a.hi}; }
  friend constexpr bool operator==(U128 a, U128 b) { return a.lo == b.lo && a.hi == b.hi; }
  friend constexpr bool operator!=(U128 a, U128 b) { return !(a == b); }
  U128& operator&=(U128 b) { return *this = *this & b; }
  U128& operator|=(U128 b) { return *this = *this | b; }
  U128& operator^=(U128 b) { return *this = *this ^ b; }
};

// Population count without requiring the popcnt instruction in baseline code (x86-64 without
// -mpopcnt would call libgcc); kernels compiled with popcnt get the instruction via the builtin.
inline int popcount64(uint64_t x) {
#if defined(__POPCNT__) || defined(__aarch64__)
  return __builtin_popcountll(x);
#else
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
#endif
}

/** The popcount instruction itself, usable from baseline code: call it only where the CPU has
 *  one (CpuInfo::popcnt; every x86-64 since 2008, and arm64, where the builtin is that instruction). */
inline uint64_t hardwarePopcount(uint64_t x) {  // 64-bit result: used as an index, no extension
#if defined(__x86_64__)
  // Zeroing the output first breaks popcnt's false dependency on it (Intel before Cannon Lake),
  // which otherwise chains the independent popcounts of rankP2 one after another.
  uint64_t r;
  __asm__("xorl %k0, %k0\n\tpopcnt %1, %0" : "=&r"(r) : "r"(x) : "cc");
  return r;
#else
  return static_cast<uint64_t>(popcount64(x));
#endif
}

inline bool any(uint64_t x) { return x != 0; }
inline bool any(U128 x) { return (x.lo | x.hi) != 0; }
inline int popcount(uint64_t x) { return popcount64(x); }
inline int popcount(U128 x) { return popcount64(x.lo) + popcount64(x.hi); }
/** Index of the lowest set bit; x must be non-zero. */
inline int lowest(uint64_t x) { return __builtin_ctzll(x); }
inline int lowest(U128 x) { return x.lo ? __builtin_ctzll(x.lo) : 64 + __builtin_ctzll(x.hi); }
inline uint64_t clearLowest(uint64_t x) { return x & (x - 1); }
inline U128 clearLowest(U128 x) { return x.lo ? U128{x.lo & (x.lo - 1), x.hi} : U128{0, x.hi & (x.hi - 1)}; }

template <class B> B cellBit(int c);
template <> inline uint64_t cellBit<uint64_t>(int c) { return uint64_t{1} << c; }
template <> inline U128 cellBit<U128>(int c) { return c < 64 ? U128{uint64_t{1} << c, 0} : U128{0, uint64_t{1} << (c - 64)}; }

inline bool test(uint64_t x, int c) { return (x >> c) & 1; }
inline bool test(U128 x, int c) { return c < 64 ? (x.lo >> c) & 1 : (x.hi >> (c - 64)) & 1; }

/** Bits below cell c. */
template <class B> B below(int c);
template <> inline uint64_t below<uint64_t>(int c) { return (uint64_t{1} << c) - 1; }
template <> inline U128 below<U128>(int c) {
  return c < 64 ? U128{(uint64_t{1} << c) - 1, 0} : U128{~uint64_t{0}, (uint64_t{1} << (c - 64)) - 1};
}

/** Low 32-bit words, as the TS core sees them (checksums must agree across backends). */
inline uint32_t word0(uint64_t x) { return static_cast<uint32_t>(x); }
inline uint32_t word0(U128 x) { return static_cast<uint32_t>(x.lo); }
inline uint32_t wordsXor(uint64_t x) { return static_cast<uint32_t>(x) ^ static_cast<uint32_t>(x >> 32); }
inline uint32_t wordsXor(U128 x) {
  return static_cast<uint32_t>(x.lo) ^ static_cast<uint32_t>(x.lo >> 32) ^ static_cast<uint32_t>(x.hi);
}

/** 32-bit word w (0..2) of a board. */
inline uint32_t word(uint64_t x, int w) { return w == 0 ? static_cast<uint32_t>(x) : w == 1 ? static_cast<uint32_t>(x >> 32) : 0; }
inline uint32_t word(U128 x, int w) {
  return w == 0 ? static_cast<uint32_t>(x.lo) : w == 1 ? static_cast<uint32_t>(x.lo >> 32) : static_cast<uint32_t>(x.hi);
}
template <class B> B fromWords(const uint32_t* w);
template <> inline uint64_t fromWords<uint64_t>(const uint32_t* w) { return w[0] | (uint64_t{w[1]} << 32); }
template <> inline U128 fromWords<U128>(const uint32_t* w) { return {w[0] | (uint64_t{w[1]} << 32), w[2]}; }

}  // namespace cck
