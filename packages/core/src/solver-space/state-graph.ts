/**
 * The moves between stored states (native kernel: state_graph.inl): the stored index of each
 * child and each parent of a stored state.
 * Kept apart from the table (table-parts.ts): nothing here reads or writes a value.
 *
 * A stored state is (a, b) with P1 = a to move. After P1 moves a -> a', the position (a', b,
 * P2 to move) is read as its colour swap (rot b, rot a', P1 to move), mirrored when rot b is not
 * its group's representative. Moves are reversible, so the parents of (a, b), the states
 * (a, b', P2 to move) with b' = b ^ from ^ to, are found with P2's move generator.
 */
import { WORDS, noPlacement, permuteSet, sameBitboard } from '../bits/bitboard.js';
import type { BitboardEngine } from '../engine/engine.js';
import { BINOMIAL_STRIDE as S, BINOMIAL_TABLE as C } from '../ranking/binomial.js';
import { rankSet } from '../ranking/combination.js';
import type { StateSpace } from './state-space.js';

/** The parents of one stored state (StateGraph.parentsOf), reused from call to call. */
export class ParentList {
  count = 0;
  /** Stored indices, in the order of P2's moves, each mirror twin right after its parent. */
  readonly index: Float64Array;
  /** Positions (P1 to move), WORDS words per parent; only parentsWithPositions() fills them. */
  readonly p1: Uint32Array;
  readonly p2: Uint32Array;

  constructor(capacity: number) {
    this.index = new Float64Array(capacity);
    this.p1 = new Uint32Array(capacity * WORDS);
    this.p2 = new Uint32Array(capacity * WORDS);
  }
}

export class StateGraph {
  private readonly n: number;
  /** Cell maps: rotation, and rotation followed by the mirror. */
  private readonly rot: Int32Array;
  private readonly rotMirror: Int32Array;
  private readonly set = new Uint32Array(WORDS);

  constructor(
    private readonly engine: BitboardEngine,
    private readonly space: StateSpace,
  ) {
    const n = space.cells;
    this.n = n;
    const mirror = space.variant.geometry.mirror;
    this.rot = new Int32Array(n);
    this.rotMirror = new Int32Array(n);
    for (let c = 0; c < n; c++) {
      this.rot[c] = n - 1 - c;
      this.rotMirror[c] = mirror[n - 1 - c]!;
    }
    this.childFreeRows = new Uint16Array(n);
    const moveKeys = n * n;
    this.parentGroupStamp = new Float64Array(moveKeys);
    this.parentGroupBase = new Float64Array(moveKeys);
    this.parentGroupFlags = new Uint8Array(moveKeys);
    this.parentGroupFreeRows = new Uint16Array(moveKeys * n);
    this.parentGroupP1 = new Uint32Array(moveKeys * WORDS);
    this.parentMoves = new Int32Array(2 * engine.maxMoves);
    this.parents = new ParentList(2 * engine.maxMoves); // a parent and its twin per move at most
  }

  // Where the children of (a, b) live, set by prepareChildren for childIndexOf: their P1 is rot(b)
  // (mirrored if needed), one group for all moves; their P2 is map(a') with a' = a ^ from ^ to,
  // so it starts from map(a) (words childP2) and toggles two cells. The group depends on b only,
  // which a pass unit fixes: it is computed again only when b changes.
  private preparedGroup = 0;
  private childBase = 0;
  private childMap: Int32Array = new Int32Array(0);
  private readonly childP2 = new Uint32Array(WORDS);
  private readonly childrenOf = noPlacement();
  /** Row offset in the binomial table of each cell's index among the free cells of the
   *  children's P1 placement (see freeRows). */
  private readonly childFreeRows: Uint16Array;

  /** Prepares childIndexOf() for the children of (a, b). */
  prepareChildren(a: Uint32Array, b: Uint32Array): void {
    this.childGroup(b);
    this.childP2.set(this.mapped(a, this.childMap));
  }

  /** The group the children of states with P2 placement b lie in (prepared for them). */
  childGroup(b: Uint32Array): number {
    if (sameBitboard(this.childrenOf, b)) return this.preparedGroup;
    this.childrenOf.set(b);
    const set = this.set;
    this.engine.rotate(b, set);
    const r1 = rankSet(set);
    const map = this.space.mirrored[r1] === 1 ? this.rotMirror : this.rot;
    this.childMap = map;
    this.preparedGroup = this.space.groupOfRank[r1]!;
    this.childBase = this.preparedGroup * this.space.p2Placements;
    this.freeRows(this.mapped(b, map), this.childFreeRows, 0);
    return this.preparedGroup;
  }

  /** Stored index of the child of the prepared state after the move from -> to. */
  childIndexOf(from: number, to: number): number {
    const f = this.childMap[from]!;
    const t = this.childMap[to]!;
    let d0 = this.childP2[0]!;
    let d1 = this.childP2[1]!;
    let d2 = this.childP2[2]!;
    if (f < 32) d0 ^= 1 << f;
    else if (f < 64) d1 ^= 1 << (f - 32);
    else d2 ^= 1 << (f - 64);
    if (t < 32) d0 ^= 1 << t;
    else if (t < 64) d1 ^= 1 << (t - 32);
    else d2 ^= 1 << (t - 64);
    return this.childBase + this.rankAmongFree(d0, d1, d2, this.childFreeRows, 0);
  }

  private readonly parentMoves: Int32Array;
  private readonly parents: ParentList;
  // Where the parents reached by one P2 move lie (see fillParents), by from * n + to: they depend
  // on b and the move only, not on a, so a pass unit (one b) computes each once for all its
  // losses. An entry is valid when its stamp is parentStamp, which changes with b.
  private readonly parentsOfB = noPlacement();
  private parentStamp = 0;
  private readonly parentGroupStamp: Float64Array;
  private readonly parentGroupBase: Float64Array;
  private readonly parentGroupFlags: Uint8Array; // 1: stored mirrored, 2: has a mirror twin
  private readonly parentGroupFreeRows: Uint16Array; // freeRows of the stored P1, n per entry
  private readonly parentGroupP1: Uint32Array; // the stored P1, WORDS per entry
  // rot(a) and its mirror image, the parent's P2 as stored, for the a they were computed from.
  private readonly parentP2Of = noPlacement();
  private readonly parentP2 = new Uint32Array(2 * WORDS);

  /** Stored indices of the parents of (a, b) (see fillParents); valid until the next call. */
  parentsOf(a: Uint32Array, b: Uint32Array): ParentList {
    return this.fillParents(a, b, false);
  }

  /** The same with the parents' positions (distances look at their children). */
  parentsWithPositions(a: Uint32Array, b: Uint32Array): ParentList {
    return this.fillParents(a, b, true);
  }

  /**
   * The parents (a, b', P2 to move) of (a, b), one per P2 move b -> b' = b ^ from ^ to, stored
   * as P1 = rot(b'), P2 = rot(a), mirrored together when rot(b') is not canonical. A parent
   * whose P1 placement is its own mirror image in a mirror-symmetric variant has a mirror twin,
   * (P1, mirror P2), stored too with the same value (found by no move generator): it follows it.
   */
  private fillParents(a: Uint32Array, b: Uint32Array, positions: boolean): ParentList {
    const moves = this.parentMoves;
    const count = this.engine.generate(b[0]!, b[1]!, b[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    if (!sameBitboard(this.parentP2Of, a)) {
      this.parentP2Of.set(a);
      this.parentP2.set(this.mapped(a, this.rot), 0);
      this.parentP2.set(this.mapped(a, this.rotMirror), WORDS);
    }
    const list = this.parents;
    const q = this.parentP2;
    let p = 0;
    for (let i = 0; i < count; i++) {
      const entry = this.parentGroup(b, moves[2 * i]!, moves[2 * i + 1]!);
      const flags = this.parentGroupFlags[entry]!;
      const base = this.parentGroupBase[entry]!;
      const rows = entry * this.n;
      // The parent's P2 as stored is at parentP2[p2..], its twin's at the other half.
      let p2 = (flags & 1) === 1 ? WORDS : 0;
      for (let copies = (flags & 2) !== 0 ? 2 : 1; copies > 0; copies--, p2 = WORDS - p2, p++) {
        list.index[p] = base + this.rankAmongFree(q[p2]!, q[p2 + 1]!, q[p2 + 2]!, this.parentGroupFreeRows, rows);
        if (!positions) continue;
        for (let w = 0; w < WORDS; w++) {
          list.p1[p * WORDS + w] = this.parentGroupP1[entry * WORDS + w]!;
          list.p2[p * WORDS + w] = q[p2 + w]!;
        }
      }
    }
    list.count = p;
    return list;
  }

  /** The parent-group entry of the P2 move from -> to out of b, computed on first use. */
  private parentGroup(b: Uint32Array, from: number, to: number): number {
    if (!sameBitboard(this.parentsOfB, b)) {
      this.parentsOfB.set(b); // entries start at stamp 0, so the first b (stamp 1) finds none
      this.parentStamp++;
    }
    const entry = from * this.n + to;
    if (this.parentGroupStamp[entry] === this.parentStamp) return entry;
    this.parentGroupStamp[entry] = this.parentStamp;
    const set = this.set;
    for (let w = 0; w < WORDS; w++) set[w] = b[w]!;
    set[from >>> 5]! ^= 1 << (from & 31);
    set[to >>> 5]! ^= 1 << (to & 31);
    const rotated = this.mapped(set, this.rot);
    const r1 = rankSet(rotated);
    const mirrored = this.space.mirrored[r1] === 1;
    const group = this.space.groupOfRank[r1]!;
    const twin = this.space.variant.mirrorSymmetric && this.space.groupWeight[group] === 1;
    this.parentGroupFlags[entry] = (mirrored ? 1 : 0) | (twin ? 2 : 0);
    this.parentGroupBase[entry] = group * this.space.p2Placements;
    const map = mirrored ? this.rotMirror : this.rot;
    const p1 = this.mapped(set, map);
    this.parentGroupP1.set(p1, entry * WORDS);
    this.freeRows(p1, this.parentGroupFreeRows, entry * this.n);
    return entry;
  }

  /** rankP2 of the set (d0, d1, d2) among the cells P1 leaves free, without pext: each cell c
   *  adds C(index of c among the free cells, i), its row offset read from freeRows(P1). */
  private rankAmongFree(d0: number, d1: number, d2: number, rows: Uint16Array, offset: number): number {
    let rank = 0;
    let i = 1;
    for (let w = 0; w < WORDS; w++) {
      let x = w === 0 ? d0 : w === 1 ? d1 : d2;
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        rank += C[rows[offset + (w << 5) + 31 - Math.clz32(low)]! + i]!;
        i++;
      }
    }
    return rank;
  }

  /** out[offset + c] = (c - |P1 below c|) * S for every cell c: the binomial-table row of c's
   *  index among the cells P1 leaves free. */
  private freeRows(p1: Uint32Array, out: Uint16Array, offset: number): void {
    let below = 0;
    for (let c = 0; c < this.n; c++) {
      out[offset + c] = (c - below) * S;
      below += (p1[c >>> 5]! >>> (c & 31)) & 1;
    }
  }

  private readonly mappedScratch = new Uint32Array(WORDS);
  private mapped(b: Uint32Array, map: Int32Array): Uint32Array {
    permuteSet(b, map, this.mappedScratch);
    return this.mappedScratch;
  }
}
