// Board geometry and per-variant tables (docs/rules.md sections 1-4), built at run time from the board
// size and P1's start cells. Kernel-independent; the kernels only read these tables.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cck {

enum class RuleMode : uint8_t { Clean = 0, Published = 1 };

struct JumpPair {
  uint8_t over, to;
};

/** Bounds that fixed-size buffers rely on (cells, pieces): checked by Geometry and Variant. */
constexpr int kMaxBoardSize = 9;
constexpr int kMaxCells = kMaxBoardSize * kMaxBoardSize;
constexpr int kMaxPieces = 12;

struct Geometry {
  int m = 0, cells = 0;
  std::vector<std::vector<int>> neighbours;   // sorted
  std::vector<std::vector<JumpPair>> jumps;   // sorted by landing cell
  std::vector<int> mirror;                    // left-right mirror (i, j) -> (j, i)
  std::vector<int> row;                       // r = i + j: steps from cell 0's corner

  explicit Geometry(int size) : m(size), cells(size * size) {
    if (size < 2 || size > kMaxBoardSize) throw std::invalid_argument("board size " + std::to_string(size) + " is not supported");
    // Lattice (i, j): r = i + j, index = cells in rows above r + (j - max(0, r - m + 1)).
    std::vector<int> rowStart(2 * m);
    for (int r = 0, at = 0; r < 2 * m - 1; r++) {
      rowStart[r] = at;
      at += r <= m - 1 ? r + 1 : 2 * m - 1 - r;
    }
    auto index = [&](int i, int j) {
      if (i < 0 || j < 0 || i >= m || j >= m) return -1;
      int r = i + j;
      return rowStart[r] + j - (r - m + 1 > 0 ? r - m + 1 : 0);
    };
    static const int kDirs[6][2] = {{1, -1}, {-1, 1}, {0, -1}, {-1, 0}, {1, 0}, {0, 1}};
    neighbours.resize(cells);
    jumps.resize(cells);
    mirror.resize(cells);
    row.resize(cells);
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < m; j++) {
        int c = index(i, j);
        mirror[c] = index(j, i);
        row[c] = i + j;
        for (auto& d : kDirs) {
          int over = index(i + d[0], j + d[1]);
          if (over < 0) continue;
          neighbours[c].push_back(over);
          int to = index(i + 2 * d[0], j + 2 * d[1]);
          if (to >= 0) jumps[c].push_back({static_cast<uint8_t>(over), static_cast<uint8_t>(to)});
        }
        std::sort(neighbours[c].begin(), neighbours[c].end());
        std::sort(jumps[c].begin(), jumps[c].end(), [](JumpPair a, JumpPair b) { return a.to < b.to; });
      }
    }
  }
};

/** Binomial coefficients C(n, k) for n <= 96, k <= 12 (exact in 64 bits). */
struct Binomials {
  static constexpr int N = 97, K = 13;
  uint64_t c[N][K] = {};
  Binomials() {
    for (int n = 0; n < N; n++) {
      c[n][0] = 1;
      for (int k = 1; k < K && k <= n; k++) c[n][k] = c[n - 1][k - 1] + (k <= n - 1 ? c[n - 1][k] : 0);
    }
  }
  static const Binomials& get() {
    static const Binomials table;
    return table;
  }
};

/** Everything a kernel needs about one variant and rule mode. */
struct Variant {
  int m = 0, cells = 0, pieces = 0;
  RuleMode rules = RuleMode::Clean;
  Geometry geometry;
  std::vector<int> p1Start, p2Start;
  /** The left-right mirror is a symmetry only when the start areas are mirror-symmetric. */
  bool mirrorSymmetric = true;

  Variant(int size, int k, RuleMode mode, std::vector<int> start)
      : m(size), cells(size * size), pieces(k), rules(mode), geometry(size), p1Start(std::move(start)) {
    if (static_cast<int>(p1Start.size()) != k) throw std::invalid_argument("start area size differs from the piece count");
    if (k < 1 || k > kMaxPieces || 2 * k > cells) throw std::invalid_argument("impossible piece count");
    for (int c : p1Start) {
      if (c < 0 || c >= cells) throw std::invalid_argument("start cell outside the board");
      p2Start.push_back(cells - 1 - c);
    }
    std::sort(p2Start.begin(), p2Start.end());
    for (int c : p1Start)
      if (std::find(p1Start.begin(), p1Start.end(), geometry.mirror[c]) == p1Start.end()) mirrorSymmetric = false;
  }
};

}  // namespace cck
