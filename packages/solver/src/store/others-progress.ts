/**
 * Where the other parts of a shared step have got, for one part's sweep (band-step.ts,
 * sliceSweep): the slices they won (PartClaims.othersSlices, in order) and the unit below which
 * each has published its slices (ProofExchange.publishedThrough). Before a slice at unit `at`,
 * waitBefore waits while another part's slice more than WAIT_AFTER_UNITS units and a slice behind
 * is not in its files yet; for at most MAX_WAIT_SECONDS, after which that part's slices so far are
 * not waited for (a worker stopped or gone: its proofs come when they come, or are the later
 * passes' to find). A part waits MAX_WAIT_SECONDS and WAIT_SHARE of its sweep's time in all, at
 * most: the others stopped again and again, it goes on.
 */
import type { BandStepHooks } from './band-step-jobs.js';
import type { ProofExchange } from './proof-exchange.js';
import type { PartClaims } from './slice-claims.js';

/**
 * How far a part goes past a slice another part holds before it waits for that slice's proofs:
 * WAIT_AFTER_UNITS units of the band and a slice (OthersProgress.waitBefore); at most
 * MAX_WAIT_SECONDS each time the other stops publishing, and MAX_WAIT_SECONDS and WAIT_SHARE of
 * its sweep's time in all. A state waiting for a proof of a slice further on is revisited
 * REVISIT_LAG (64) of its part's units later: a part that ran on while another did not publish
 * revisited its states too early, and lost the chains of proofs they began (the cluster test of
 * 7x7/3 in 4 bands proved 34.7% in pass 1 once in CI; with workers stopped for 0.1-1 s again and
 * again, 92.1% in one run of ten and two runs of minutes; with the waits, 99.2% in each of seven:
 * docs/sharding.md, "A part that falls behind"). With proof-exchange.ts's MAX_BAND_UNITS_BETWEEN_FILES (32) below it, a
 * part never waits for another that runs at about its pace.
 */
export const WAIT_AFTER_UNITS = 40;
export const MAX_WAIT_SECONDS = 3;
/** The share of its sweep's time a part waits at most, past a first MAX_WAIT_SECONDS. */
export const WAIT_SHARE = 0.25;

/** Milliseconds between looks at the others' files while a part waits for them, and the looks
 *  between listings of the folder (for an attempt of the part waited for not seen yet). */
const WAIT_POLL_MS = 10;
const LIST_EVERY_POLLS = 25;

export class OthersProgress {
  /** othersSlices[next] is the first not known to be published; [0, named) were named to the
   *  exchange (their attempts' files taken without a listing of the folder). */
  private next = 0;
  private named = 0;
  /** By part: the unit below which its slices are no longer waited for. */
  private readonly givenUpBelow = new Map<number, number>();
  private readonly started = performance.now();
  /** Milliseconds waited so far. */
  private waited = 0;

  constructor(
    private readonly claims: PartClaims,
    private readonly exchange: ProofExchange,
    private readonly sliceUnits: number,
    private readonly parts: number,
  ) {}

  /** Before a slice at unit `at` (+Infinity: before the sweep's last revisit, for every slice
   *  the others hold): takes the others' files, those of the attempts the claims just named
   *  too, and waits as above; the seconds waited. */
  async waitBefore(at: number, hooks: BandStepHooks): Promise<number> {
    const held = this.claims.othersSlices;
    for (; this.named < held.length; this.named++) this.exchange.expect(held[this.named]!.part, held[this.named]!.attempt);
    this.exchange.takeOthers();
    const before = this.waited;
    while (this.next < held.length) {
      const { slice, part } = held[this.next]!;
      const from = slice * this.sliceUnits;
      if (part >= this.parts || this.exchange.publishedThrough(part) > from || from < (this.givenUpBelow.get(part) ?? 0)) {
        this.next++;
        continue;
      }
      if (at - from <= WAIT_AFTER_UNITS + this.sliceUnits) break;
      // First this part's own slices, all visited below `at`: so a part only ever waits for a
      // slice nobody has visited, and two parts never wait for each other.
      if (Number.isFinite(at)) this.exchange.publish(at);
      const started = performance.now();
      const limit = Math.min(MAX_WAIT_SECONDS * 1000, MAX_WAIT_SECONDS * 1000 + WAIT_SHARE * (started - this.started) - this.waited);
      for (let polls = 1; ; polls++) {
        if (performance.now() - started >= limit) {
          this.givenUpBelow.set(part, at);
          break;
        }
        await new Promise<void>((resolve) => setTimeout(resolve, WAIT_POLL_MS));
        hooks.beforeCall?.();
        // The folder listed now and then too: the part may have been run again meanwhile.
        this.exchange.takeOthers(polls % LIST_EVERY_POLLS === 0);
        if (this.exchange.publishedThrough(part) > from) break;
      }
      this.waited += performance.now() - started;
    }
    return (this.waited - before) / 1000;
  }
}
