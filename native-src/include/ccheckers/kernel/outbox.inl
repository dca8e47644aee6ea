// The messages one worker's visits of a band send to the other bands (core's
// solver-space/outbox.ts): kept by band, sorted without repeats (a radix sort), and the workers'
// runs merged into a kernel call's output, JS doubles or coded runs (BandOutput). Included after
// band_table.inl (messageOf, StatePlace), in the same kernel namespace.

/** The radix sort's digits: up to 11 bits each (2,048 counts, in L1), up to 5 (55 bits, more
 *  than the 53 of any message). */
constexpr int kMaxDigitBits = 11, kMaxDigits = 5;
constexpr size_t kSortCounts = static_cast<size_t>(kMaxDigits) << kMaxDigitBits;

/**
 * Sorts message keys m[0, n) ascending and drops repeats (message combining: a state sent the same
 * value by several visits is sent it once, and the file of a run of sorted messages codes each as
 * its distance from the one before, about a byte instead of 8). Returns the count kept, in the
 * front of m. A radix sort (digits of up to 11 bits, as few as the keys' highest bit needs: a
 * band's local indices times 4, or stored indices times 4 for requests), through `keys` (n of
 * them) and m's own memory; `counts` holds kSortCounts. Allocates nothing.
 */
inline size_t sortMessages(uint64_t* m, size_t n, uint64_t* keys, size_t* counts) {
  if (n < 2) return n;
  bool inKeys = false;  // where the keys are after the passes so far
  uint64_t bitsUsed = 0;
  for (size_t i = 0; i < n; i++) bitsUsed |= m[i];
  const int bits = bitsUsed == 0 ? 1 : 64 - __builtin_clzll(bitsUsed);
  const int digits = (bits + kMaxDigitBits - 1) / kMaxDigitBits;
  if (n < 256 || digits > kMaxDigits) {
    // Few keys (or, never from messageOf, more than 55 bits): a comparison sort.
    std::sort(m, m + n);
  } else {
    // Every digit's counts in one read, then one scatter per digit that is not the same in all
    // keys, back and forth between m and keys.
    const int width = (bits + digits - 1) / digits;
    const uint64_t mask = (uint64_t{1} << width) - 1;
    size_t* bucket[kMaxDigits];
    for (int d = 0; d < digits; d++) {
      bucket[d] = counts + (static_cast<size_t>(d) << kMaxDigitBits);
      std::fill(bucket[d], bucket[d] + mask + 1, size_t{0});
    }
    for (size_t i = 0; i < n; i++) {
      const uint64_t k = m[i];
      for (int d = 0; d < digits; d++) bucket[d][(k >> (d * width)) & mask]++;
    }
    for (int d = 0; d < digits; d++) {
      const int shift = d * width;
      if (bucket[d][(m[0] >> shift) & mask] == n) continue;  // the same digit everywhere
      size_t at = 0;
      for (uint64_t v = 0; v <= mask; v++) at += std::exchange(bucket[d][v], at);
      const uint64_t* from = inKeys ? keys : m;
      uint64_t* to = inKeys ? m : keys;
      for (size_t i = 0; i < n; i++) to[bucket[d][(from[i] >> shift) & mask]++] = from[i];
      inKeys = !inKeys;
    }
  }
  // Repeats dropped, back in m (in place when the keys are there already: kept <= read).
  const uint64_t* sorted = inKeys ? keys : m;
  size_t kept = 1;
  m[0] = sorted[0];
  for (size_t i = 1; i < n; i++)
    if (sorted[i] != m[kept - 1]) m[kept++] = sorted[i];
  return kept;
}

/**
 * The messages of one worker, by the band they are for (messageOf's integers): sorted and without
 * repeats by sort(), which the worker calls at the end of its sweep, so that the sorts run on all
 * threads at once and a thread done with its units early sorts while the others finish theirs.
 * collectOutboxes then merges the workers' runs.
 */
struct Outbox {
  std::vector<std::vector<uint64_t>> byBand;
  /** The sort's scratch: a key per message of the largest band, in `borrowed` (a part of the
   *  caller's output buffer, free until the merge) where it has room, else in `keys`, kept
   *  between calls; and the digit counts. */
  uint64_t* borrowed = nullptr;
  size_t borrowedRoom = 0;
  std::vector<uint64_t> keys;
  std::vector<size_t> counts;

  explicit Outbox(uint32_t bands = 0) : byBand(bands) {}
  /** The value of a state held elsewhere, to the band that holds it. */
  void sendValue(const StatePlace& place, int value) { byBand[place.band].push_back(messageOf(place.local, value)); }
  /** A request to visit stored state `index` again, to `band` (that of its children). */
  void sendRequest(uint32_t band, uint64_t index) { byBand[band].push_back(messageOf(index, 0)); }

  /** Every band's messages sorted and without repeats (sortMessages). */
  void sort() {
    size_t most = 0;
    for (const std::vector<uint64_t>& v : byBand) most = std::max(most, v.size());
    if (most < 2) return;
    uint64_t* scratch = borrowed;
    if (most > borrowedRoom) {
      if (keys.size() < most) keys.resize(most);
      scratch = keys.data();
    }
    counts.resize(kSortCounts);
    for (std::vector<uint64_t>& v : byBand) v.resize(sortMessages(v.data(), v.size(), scratch, counts.data()));
  }
};

/** What a merge of three runs or more uses: taken before the merging threads start (a bad_alloc
 *  in one would end the process). */
struct MergeScratch {
  std::vector<const std::vector<uint64_t>*> runs;
  std::vector<std::pair<uint64_t, size_t>> heap;
  std::vector<size_t> at;
  explicit MergeScratch(size_t workers = 0) {
    runs.reserve(workers);
    heap.reserve(workers);
    at.reserve(workers);
  }
};

/**
 * Calls put(k) for the keys of the sorted runs `scratch.runs` in ascending order, each once (a key
 * in two runs, which two workers sent, is put once). Two runs (two threads) are merged directly,
 * more through a heap of their heads.
 */
template <class Put>
void mergeRuns(MergeScratch& scratch, Put&& put) {
  const std::vector<const std::vector<uint64_t>*>& runs = scratch.runs;
  bool any = false;
  uint64_t last = 0;
  const auto once = [&](uint64_t k) {
    if (any && k == last) return;
    put(k);
    last = k;
    any = true;
  };
  if (runs.size() == 1) {
    for (uint64_t k : *runs[0]) once(k);
  } else if (runs.size() == 2) {
    const std::vector<uint64_t>& x = *runs[0];
    const std::vector<uint64_t>& y = *runs[1];
    size_t i = 0, j = 0;
    while (i < x.size() && j < y.size()) once(x[i] <= y[j] ? x[i++] : y[j++]);
    while (i < x.size()) once(x[i++]);
    while (j < y.size()) once(y[j++]);
  } else if (!runs.empty()) {
    // (head, run) pairs, the least on top (the scratch has room for one per run).
    std::vector<std::pair<uint64_t, size_t>>& heap = scratch.heap;
    std::vector<size_t>& at = scratch.at;
    heap.clear();
    at.assign(runs.size(), 0);
    for (size_t r = 0; r < runs.size(); r++)
      if (!runs[r]->empty()) heap.emplace_back((*runs[r])[0], r);
    const auto greater = [](const auto& p, const auto& q) { return p.first > q.first; };
    std::make_heap(heap.begin(), heap.end(), greater);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), greater);
      auto& [k, r] = heap.back();
      once(k);
      if (++at[r] < runs[r]->size()) {
        k = (*runs[r])[at[r]];
        std::push_heap(heap.begin(), heap.end(), greater);
      } else {
        heap.pop_back();
      }
    }
  }
}

/** The merged runs as doubles at `to`; returns the count. */
inline size_t mergeToDoubles(MergeScratch& scratch, double* to) {
  double* const first = to;
  mergeRuns(scratch, [&](uint64_t k) { *to++ = static_cast<double>(k); });
  return static_cast<size_t>(to - first);
}

/**
 * The merged runs as one message run (message_runs.hpp: count, first, distances) in `bytes`, which
 * has room for 8 bytes a key and 16 more: the messages from bytes + 8 on, then the count right
 * before them. Returns {where the run starts, its bytes} and the count in `kept`.
 */
inline std::pair<uint8_t*, size_t> mergeToRun(MergeScratch& scratch, uint8_t* bytes, size_t& kept) {
  size_t at = kMaxNumberBytes;
  size_t count = 0;
  uint64_t last = 0;
  mergeRuns(scratch, [&](uint64_t k) {
    at = writeNumber(bytes, at, count == 0 ? k : k - last);
    last = k;
    count++;
  });
  kept = count;
  if (count == 0) return {bytes, 0};
  uint8_t head[kMaxNumberBytes + 2];
  const size_t headBytes = writeNumber(head, 0, count);
  uint8_t* run = bytes + kMaxNumberBytes - headBytes;
  std::memcpy(run, head, headBytes);
  return {run, at - (kMaxNumberBytes - headBytes)};
}

/**
 * Before a band call: the outboxes emptied (a call that threw left its messages), one per thread,
 * each lent a part of the second half of the caller's output buffer for its sort's keys (calls are
 * sized to make at most half of it; the merge writes from the front, after the sorts).
 */
inline void prepareOutboxes(std::vector<Outbox>& outboxes, uint32_t bands, const BandOutput& out, int threads, const double* input, size_t inputCount) {
  outboxes.resize(std::max(1, threads));
  // Not where the call's input is (a worker sorts while the others still read it).
  const auto address = [](const double* p) { return reinterpret_cast<uintptr_t>(p); };
  const bool apart = input == nullptr || out.given == nullptr || address(input + inputCount) <= address(out.given) ||
                     address(out.given + out.capacity) <= address(input);
  const size_t room = out.given && apart ? out.capacity / 2 / outboxes.size() : 0;
  for (size_t t = 0; t < outboxes.size(); t++) {
    Outbox& o = outboxes[t];
    o.byBand.resize(bands);
    for (std::vector<uint64_t>& v : o.byBand) v.clear();
    o.borrowed = room > 0 ? reinterpret_cast<uint64_t*>(out.given + out.capacity - (t + 1) * room) : nullptr;
    o.borrowedRoom = room;
  }
}

/** The workers' outboxes (each sorted: Outbox::sort) as one output, band by band, each band's
 *  messages merged without repeats (the bands merged on up to `threads` threads of `pool`), as
 *  doubles or, where the caller asks and has the room, as coded runs (BandOutput). The outboxes
 *  are emptied and keep their memory for the next call (fresh vectors each call cost a page fault
 *  per 4 KiB of messages: 7x7/3 spent more time in them than in its visits). */
inline void collectOutboxes(std::vector<Outbox>& outboxes, uint32_t bands, BandOutput& out, int threads, ThreadPool& pool) {
  out.counts.assign(bands, 0);
  std::vector<size_t> start(bands + 1, 0);
  for (uint32_t b = 0; b < bands; b++) {
    size_t size = 0;
    for (const Outbox& o : outboxes) size += o.byBand[b].size();
    start[b + 1] = start[b] + size;
  }
  const size_t total = start[bands];
  // Coded: band b's run is made in bytes [8 * start[b] + 16 * b, ...) of the caller's buffer.
  out.coded = out.code && out.given != nullptr && total + 2 * static_cast<size_t>(bands) <= out.capacity;
  out.inGiven = out.given != nullptr && total <= out.capacity;
  double* to = out.given;
  if (!out.inGiven) {
    out.messages.resize(total);  // on the calling thread: a bad_alloc in a merging thread would end the process
    to = out.messages.data();
  }
  uint8_t* const bytes = reinterpret_cast<uint8_t*>(out.given);
  std::vector<std::pair<uint8_t*, size_t>> run(out.coded ? bands : 0);
  const int mergers = total < (size_t{1} << 14) ? 1 : static_cast<int>(std::min<uint32_t>(static_cast<uint32_t>(std::max(1, threads)), bands));
  std::vector<MergeScratch> scratch(mergers, MergeScratch(outboxes.size()));
  std::vector<size_t> kept(bands, 0);
  std::atomic<uint32_t> next{0};
  pool.run(mergers, [&](int t) {
    for (uint32_t b; (b = next.fetch_add(1)) < bands;) {
      scratch[t].runs.clear();
      for (const Outbox& o : outboxes)
        if (!o.byBand[b].empty()) scratch[t].runs.push_back(&o.byBand[b]);
      if (out.coded) {
        run[b] = mergeToRun(scratch[t], bytes + 8 * start[b] + 16 * static_cast<size_t>(b), kept[b]);
      } else {
        kept[b] = mergeToDoubles(scratch[t], to + start[b]);
      }
    }
  });
  for (Outbox& o : outboxes)
    for (std::vector<uint64_t>& v : o.byBand) v.clear();
  // The bands' runs or kept messages moved together, in band order (each starts at or past the
  // end of those before it).
  size_t count = 0;
  if (out.coded) out.codedBytes.assign(bands, 0);
  for (uint32_t b = 0; b < bands; b++) {
    out.counts[b] = static_cast<double>(kept[b]);
    if (out.coded) {
      std::memmove(bytes + count, run[b].first, run[b].second);
      out.codedBytes[b] = static_cast<double>(run[b].second);
      count += run[b].second;
    } else {
      std::memmove(to + count, to + start[b], kept[b] * sizeof(double));
      count += kept[b];
    }
  }
  out.count = count;
}
