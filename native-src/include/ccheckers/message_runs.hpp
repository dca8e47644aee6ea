// The coding of band messages in files (core's solver-space/message-runs.ts, the same functions):
// a run is its count, its first message, then each message's distance from the one before, every
// number in LEB128 (7 bits a byte, the high bit set on all bytes of a number but its last).
// Messages are integers below 2^53 (band_table.inl's messageOf), increasing within a run.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace cck {

/** The bytes of a LEB128 number at most: messages are below 2^53. */
constexpr size_t kMaxNumberBytes = 8;
constexpr uint64_t kTwoPow53 = uint64_t{1} << 53;

inline size_t writeNumber(uint8_t* bytes, size_t at, uint64_t n) {
  while (n >= 0x80) {
    bytes[at++] = static_cast<uint8_t>(n | 0x80);
    n >>= 7;
  }
  bytes[at++] = static_cast<uint8_t>(n);
  return at;
}

/** Codes messages m[from, to) (from < to) as one run at bytes[at]; returns the end. The caller
 *  leaves (to - from + 2) * kMaxNumberBytes bytes from `at`. */
inline size_t encodeMessageRun(const double* m, size_t from, size_t to, uint8_t* bytes, size_t at) {
  at = writeNumber(bytes, at, to - from);
  double last = -1;
  for (size_t i = from; i < to; i++) {
    const double x = m[i];
    if (!(x > last && x < static_cast<double>(kTwoPow53) && x == static_cast<double>(static_cast<uint64_t>(x)))) {
      throw std::invalid_argument("message encoder: a run is increasing integers below 2^53");
    }
    at = writeNumber(bytes, at, last < 0 ? static_cast<uint64_t>(x) : static_cast<uint64_t>(x) - static_cast<uint64_t>(last));
    last = x;
  }
  return at;
}

/** A decoder's state between calls, as numbers (a Float64Array of kMessageRunState in JS):
 *  messages left in the run (0: a count next), the run's last message (-1 before its first), the
 *  number being read (its value so far, the weight of its next 7 bits), and what the last call
 *  stopped at (the next byte, the next place of the output). */
enum MessageRunState { kRunLeft, kRunLast, kRunValue, kRunWeight, kRunNextByte, kRunNextOut, kMessageRunState };

/**
 * A decoder between pieces of a file: the state as integers. decode() calls put(m) for every
 * message; decodeMessageRuns (the JS functions' shape) and the band kernel's apply of message
 * runs (BandPhase, applyRuns) both use it.
 */
struct RunDecoder {
  uint64_t left = 0;   // messages left in the run (0: a count next)
  int64_t last = -1;   // the run's last message (-1 before its first)
  uint64_t value = 0;  // the number being read, so far
  int shift = 0;       // the weight of its next 7 bits, as a shift

  /** From a state (kMessageRunState numbers), checked: anything else is refused. */
  static RunDecoder fromState(const double* state) {
    // Checked before any cast (a double out of an integer type's range is undefined behaviour).
    const auto integer = [](double x, double low, double high) { return x >= low && x < high && x == std::floor(x); };
    const double limit = static_cast<double>(kTwoPow53);
    int shift = -1;
    for (int s = 0; s <= 49; s += 7)
      if (state[kRunWeight] == static_cast<double>(uint64_t{1} << s)) shift = s;
    if (shift < 0 || !integer(state[kRunLeft], 0, limit) || !integer(state[kRunLast], -1, limit) || !integer(state[kRunValue], 0, state[kRunWeight])) {
      throw std::invalid_argument("message decoder: a state no decoder left");
    }
    return {static_cast<uint64_t>(state[kRunLeft]), static_cast<int64_t>(state[kRunLast]), static_cast<uint64_t>(state[kRunValue]), shift};
  }
  void toState(double* state) const {
    state[kRunLeft] = static_cast<double>(left);
    state[kRunLast] = static_cast<double>(last);
    state[kRunValue] = static_cast<double>(value);
    state[kRunWeight] = static_cast<double>(uint64_t{1} << shift);
  }

  /** Decodes bytes[from, count), stopping after `room` messages: put(m) for each. Returns the
   *  next byte. Refuses what no encoder writes: an empty run, a message not above the one before,
   *  a number of 2^53 or more. */
  template <class Put>
  size_t decode(const uint8_t* bytes, size_t from, size_t count, size_t room, Put&& put) {
    size_t i = from;
    while (i < count && room > 0) {
      if (left > 0 && last >= 0 && shift == 0) {
        // Inside a run, at a number's start: the distances of one byte (most of them, the
        // messages of a call being dense) in a loop of their own, without the general case's
        // branches. It stops before a byte it cannot take (0, or the first of a longer number).
        uint64_t m = static_cast<uint64_t>(last);
        const size_t n = static_cast<size_t>(std::min<uint64_t>({left, room, count - i}));
        size_t k = 0;
        for (; k < n; k++) {
          const uint8_t b = bytes[i + k];
          if (b == 0 || b >= 0x80) break;
          m += b;
          if (m >= kTwoPow53) throw std::invalid_argument("a message of 2^53 or more");
          put(m);
        }
        i += k;
        left -= k;
        room -= k;
        last = static_cast<int64_t>(m);
        if (k == n) continue;
      }
      const uint8_t b = bytes[i++];
      value |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b & 0x80) {
        shift += 7;
        if (shift > 53) throw std::invalid_argument("a number of 2^53 or more");
        continue;
      }
      if (value >= kTwoPow53) throw std::invalid_argument("a number of 2^53 or more");
      if (left == 0) {
        if (value == 0) throw std::invalid_argument("an empty run");
        left = value;
        last = -1;
      } else {
        if (last >= 0 && value == 0) throw std::invalid_argument("a message repeated");
        const uint64_t m = last < 0 ? value : static_cast<uint64_t>(last) + value;
        if (m >= kTwoPow53) throw std::invalid_argument("a message of 2^53 or more");
        put(m);
        room--;
        last = static_cast<int64_t>(m);
        left--;
      }
      value = 0;
      shift = 0;
    }
    return i;
  }
};

/** Decodes bytes[from, count) into out[at, capacity): stops at the end of either; the state carries
 *  a run and a number across calls (RunDecoder). */
inline void decodeMessageRuns(const uint8_t* bytes, size_t from, size_t count, double* out, size_t at, size_t capacity, double* state) {
  RunDecoder d = RunDecoder::fromState(state);
  const size_t next = d.decode(bytes, from, count, capacity - at, [&](uint64_t m) { out[at++] = static_cast<double>(m); });
  d.toState(state);
  state[kRunNextByte] = static_cast<double>(next);
  state[kRunNextOut] = static_cast<double>(at);
}

}  // namespace cck
