// The benchmark loops of `ccheckers bench` (core's backend/bench.ts, whose definitions and
// checksums these share): winner, successors, ranking and unranking, the next P2 placement.
// Included after state_space.inl (FreePlacements), in the same kernel namespace.

template <class B>
BenchResult runBench(const BitboardEngine<B>& e, BenchOp op, const PosWords& pw, uint64_t iterations) {
  B p1 = fromWords<B>(pw.p1), p2 = fromWords<B>(pw.p2);
  uint32_t checksum = 0;
  std::vector<uint8_t> mv(2 * static_cast<size_t>(e.n) * e.k + 2);
  std::vector<B> samples;
  if (op == BenchOp::RankP1 || op == BenchOp::RankP2) {
    uint64_t count = std::min<uint64_t>(kBenchSamples, op == BenchOp::RankP1 ? e.p1Placements : e.p2Placements);
    for (uint64_t s = 0; s < count; s++) samples.push_back(op == BenchOp::RankP1 ? e.unrankP1(s) : e.unrankP2(p1, s));
  }
  auto start = std::chrono::steady_clock::now();
  switch (op) {
    case BenchOp::Winner:
      for (uint64_t i = 0; i < iterations; i++) {
        checksum += e.hasWon(0, p1, p2) ? 1 : 0;
        checksum += e.hasWon(1, p1, p2) ? 2 : 0;
        asm volatile("" : "+r"(checksum));  // keep the loop from being folded
      }
      break;
    case BenchOp::Successors: {
      B own = pw.toMove == 0 ? p1 : p2;
      B occ = p1 | p2;
      for (uint64_t i = 0; i < iterations; i++) {
        asm volatile("" : "+m"(own), "+m"(occ));
        int count = e.generate(own, occ, mv.data());
        for (int m = 0; m < count; m++) {
          B flip = cellBit<B>(mv[2 * m]) | cellBit<B>(mv[2 * m + 1]);
          own ^= flip;  // apply
          checksum += word0(own) & 0xff;
          own ^= flip;  // undo
        }
        checksum += static_cast<uint32_t>(count);
      }
      break;
    }
    case BenchOp::RankP1:
    case BenchOp::RankP2: {
      size_t s = 0, count = samples.size();
      for (uint64_t i = 0; i < iterations; i++) {
        uint64_t r = op == BenchOp::RankP1 ? e.rankP1(samples[s]) : e.rankP2(p1, samples[s]);
        checksum += static_cast<uint32_t>(r);
        if (++s == count) s = 0;
      }
      break;
    }
    case BenchOp::UnrankP1:
    case BenchOp::UnrankP2: {
      uint64_t count = op == BenchOp::UnrankP1 ? e.p1Placements : e.p2Placements;
      for (uint64_t i = 0, r = 0; i < iterations; i++) {
        B x = op == BenchOp::UnrankP1 ? e.unrankP1(r) : e.unrankP2(p1, r);
        checksum += wordsXor(x);
        if (++r == count) r = 0;
      }
      break;
    }
    case BenchOp::IncrementP2: {
      // Next P2 placement among the free cells, in colex order, wrapping to the first.
#if CCK_USE_BMI2
      B freeCells = ~p1 & e.full;
      uint64_t first = (uint64_t{1} << e.k) - 1, limit = uint64_t{1} << (e.n - e.k);
      if constexpr (std::is_same_v<B, uint64_t>) {
        uint64_t x = first;
        for (uint64_t i = 0; i < iterations; i++) {
          // Gosper's hack on the compressed set; the division by the lowest bit is a shift
          uint64_t ripple = x + (x & (~x + 1));
          x = ripple >= limit ? first : (((ripple ^ x) >> 2) >> __builtin_ctzll(x)) | ripple;
          checksum += word0(pdep(x, freeCells));
        }
        break;
      }
#else
      if constexpr (std::is_same_v<B, uint64_t>) {
        // No pext/pdep: Gosper's step directly on the board. Adding the lowest piece to the
        // set with every non-free cell filled in carries across P1's pieces; the block of
        // pieces the carry cleared, less one, goes back onto the lowest free cells.
        uint64_t freeCells = ~p1 & e.full, first = 0;
        for (uint64_t rest = freeCells, j = 0; j < static_cast<uint64_t>(e.k); j++, rest &= rest - 1) first |= rest & (~rest + 1);
        uint64_t x = first;
        for (uint64_t i = 0; i < iterations; i++) {
          uint64_t next = ((x | ~freeCells) + (x & (~x + 1))) & freeCells;
          if (next == 0) {
            x = first;  // past the last placement: wrap
          } else {
            uint64_t cleared = x & ~next;
            if (cleared & (cleared - 1)) {  // more than one: refill the lowest free cells
              uint64_t rest = freeCells;
              for (int c = popcount64(cleared) - 1; c > 0; c--, rest &= rest - 1) next |= rest & (~rest + 1);
            }
            x = next;
          }
          checksum += word0(x);
        }
        break;
      }
#endif
      FreePlacements<B> placements(e, p1);
      for (uint64_t i = 0; i < iterations; i++) {
        if (!placements.next()) placements.first();
        checksum += word0(placements.placement());
      }
      break;
    }
  }
  auto end = std::chrono::steady_clock::now();
  return {static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()), checksum};
}
