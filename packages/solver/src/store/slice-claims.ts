/**
 * Which part of a shared step visits which slice of the band's units (band-step.ts, runSlice):
 * the first to claim it. A part claims the slices in order and visits those it won; a slice
 * another part holds is skipped. So a part that runs faster visits more slices, and one that
 * starts late (its worker busy, or the job run again) finds the step further on, where a fixed
 * share (every W-th slice) kept the whole step waiting for the slowest part (docs/sharding.md:
 * 7x7/3 on 2 workers, one sharing its CPU with a busy process, took 0.44-0.62x the time).
 *
 * A claim is a hard link, made in the store's folder under the slice's name, to the part's own
 * file (`claim-bB.gG.wP.ATTEMPT`, holding "part attempt"): one call that fails if the name is
 * taken, atomic on a local disk as on NFS, and a regular file whose bytes name its owner. A part
 * makes its next claim while it visits the slice it holds (a claim waited 0.36 ms here, in a folder
 * two workers and the coordinator write at once; 7x7/3's slices are 2.5 ms of a kernel's work).
 * Claims of several slices each cost fewer calls but lost chains of proofs: 7x7/2 in 4 bands for
 * 6 parts proved 67.7% in pass 1 with claims of 65,536 states, against 97% with a slice a claim.
 *
 * A part run again (a new attempt: the last was taken for dead) visits its earlier attempts'
 * claims too, as the folder held them when it started: the step's finish takes one attempt of
 * each part, and the slices that part held must be visited by the attempt taken. (A claim made by
 * the earlier attempt after that, or one a crash lost, leaves its slice to the later passes: every
 * pass lists the band's unknown states and visits them, so a slice visited by no part costs
 * proofs in pass 1, never a value.) A claim that does not read as one (a forged or corrupt file,
 * a folder, a link) is another part's.
 *
 * The claims go with the step's proof files: removed when the step runs again from none
 * (removeProofFiles) and, once the round is committed, as leftovers (ShardStore.removeLeftovers).
 */
import { closeSync, openSync, readSync, readdirSync, writeFileSync } from 'node:fs';
import { link } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseError } from '../database.js';
import { STORE_READ_FLAGS } from './store-files.js';

/** A slice's claim (s), or a part's own file its claims link to (w: part and attempt). */
export const CLAIM_FILE = /^claim-b(\d{5,})\.g(\d+)\.(?:s(\d+)|w(\d{1,4})\.([0-9a-f]{8}))$/;
/** A claim's bytes: "part attempt\n". */
const CLAIM_TEXT = /^(\d{1,4}) ([0-9a-f]{8})\n$/;
const CLAIM_MAX_BYTES = 16;

/** A slice another part won: the part and attempt its claim names. */
export interface OthersSlice {
  slice: number;
  part: number;
  attempt: string;
}

/** The step a claim is of, and the slice it claims. */
export interface ClaimFileId {
  band: number;
  generation: number;
  slice: number;
}

export function claimFileName(id: ClaimFileId): string {
  return `claim-b${String(id.band).padStart(5, '0')}.g${id.generation}.s${id.slice}`;
}

/** The file a part's claims link to. */
export function claimOwnerFileName(step: { band: number; generation: number }, part: number, attempt: string): string {
  return `claim-b${String(step.band).padStart(5, '0')}.g${step.generation}.w${part}.${attempt}`;
}

/** The step of a claim or of a part's own claim file, and the slice of a claim (none for the
 *  part's file). */
export function parseClaimFileName(name: string): (Omit<ClaimFileId, 'slice'> & { slice?: number }) | undefined {
  const m = CLAIM_FILE.exec(name);
  if (!m) return undefined;
  return { band: Number(m[1]), generation: Number(m[2]), ...(m[3] !== undefined ? { slice: Number(m[3]) } : {}) };
}

/** A part's claims in a shared step: the slices it visits, in order (band-step.ts, runSlice). */
export interface PartClaims {
  /** The step's slices. */
  readonly slices: number;
  /** Slices this attempt visits, and of those the ones an earlier attempt of its part claimed. */
  readonly won: number;
  readonly inherited: number;
  /** The slices another part won, in order, and whose they are. */
  readonly othersSlices: OthersSlice[];
  /** The next slice this part visits; undefined when every slice is another's or done. */
  next(): Promise<number | undefined>;
}

/**
 * The claims of a shared step whose parts all run in this process (band-solve.ts, the local
 * solve): as the files' claims, the slices in order to the first part that asks, without a file
 * call a slice (the links cost the shared-step tests a quarter of their time). A step run again
 * here starts from none: the process that held its claims is gone.
 */
export class StepClaims {
  private owners: Int32Array | undefined;
  private readonly attempts: string[] = [];

  /** Part `part`'s claims, its attempt `attempt`, in a step of `slices` slices. */
  part(part: number, attempt: string, slices: number): PartClaims {
    this.owners ??= new Int32Array(slices).fill(-1);
    if (this.owners.length !== slices) throw new RangeError(`StepClaims: ${slices} slices, not ${this.owners.length}`);
    this.attempts[part] = attempt;
    const owners = this.owners;
    const { attempts } = this;
    let slice = 0;
    const claims = {
      slices,
      won: 0,
      inherited: 0,
      othersSlices: [] as OthersSlice[],
      next: async (): Promise<number | undefined> => {
        for (; slice < slices; slice++) {
          const owner = owners[slice]!;
          if (owner === -1) {
            owners[slice] = part;
            claims.won++;
            return slice++;
          }
          if (owner !== part) claims.othersSlices.push({ slice, part: owner, attempt: attempts[owner]! });
        }
        return undefined;
      },
    };
    return claims;
  }
}

/** One part's claims in a shared step, made in order of the slices, as files of the store: the
 *  parts may run on any machines. */
export class SliceClaims implements PartClaims {
  /** The next slice to claim. */
  private slice = 0;
  /** The claim being made while the part visits the slice it holds. */
  private ahead: Promise<number | undefined> | undefined;
  /** This part's own file, which its claims link to (made at the first claim). */
  private owner: string | undefined;
  /** The claims of this part's earlier attempts, as the folder held them when this one started. */
  private earlier: Set<number> | undefined;
  /** Slices this attempt visits: claimed now, or by an earlier attempt of its part. */
  won = 0;
  /** Of those, the ones an earlier attempt of this part had claimed. */
  inherited = 0;
  /** The slices another part won, in order, as their claims read (one that does not read as a
   *  claim, or names this part, is left out): the sweep waits for their proofs before it goes
   *  far past them (others-progress.ts), and takes the files of the attempts they name
   *  from the first (proof-exchange.ts, expect). */
  readonly othersSlices: OthersSlice[] = [];

  constructor(
    private readonly dir: string,
    private readonly step: { band: number; generation: number },
    private readonly part: number,
    private readonly attempt: string,
    /** The step's slices (its units / the schedule's slice units, rounded up). */
    readonly slices: number,
  ) {}

  /** The next slice this part visits, claimed; undefined when every slice is another's or done. */
  async next(): Promise<number | undefined> {
    this.earlier ??= this.earlierClaims();
    const slice = await (this.ahead ?? this.claimNext());
    if (slice === undefined) return undefined;
    // The next claim is made while this slice is visited. (A step that stops meanwhile leaves it
    // made, or failed: caught here, so that no rejection goes unhandled.)
    this.ahead = this.claimNext();
    this.ahead.catch(() => {});
    this.won++;
    return slice;
  }

  /** The next slice this part holds: one it claims, or one an earlier attempt of it claimed. */
  private async claimNext(): Promise<number | undefined> {
    for (;;) {
      const slice = this.slice++;
      if (slice >= this.slices) return undefined;
      const path = join(this.dir, claimFileName({ ...this.step, slice }));
      if (await this.claim(path)) return slice;
      if (this.earlier!.has(slice)) {
        this.inherited++;
        return slice;
      }
      const holder = readClaim(path);
      if (holder && holder.part !== this.part) this.othersSlices.push({ slice, ...holder });
    }
  }

  /** Links the claim to this part's file; false if the name is taken (another's claim, or an
   *  earlier attempt's). Not flushed: a claim lost in a crash only leaves its slice to a later
   *  pass. */
  private async claim(path: string): Promise<boolean> {
    if (this.owner === undefined) {
      const owner = join(this.dir, claimOwnerFileName(this.step, this.part, this.attempt));
      writeFileSync(owner, `${this.part} ${this.attempt}\n`, { flag: 'wx' });
      this.owner = owner;
    }
    try {
      await link(this.owner, path);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'EMLINK') {
        throw new DatabaseError(path, `a shared step claims its slices with hard links, which this folder refuses (${code}): put the store on a filesystem with hard links (ext4, xfs, NFS), or solve with --schedule segments`);
      }
      throw e;
    }
  }

  /** The claims of this step in the folder that an earlier attempt of this part made. Read once,
   *  as the attempt starts: a claim the earlier attempt makes after that (it was taken for dead,
   *  but runs on) is its own to visit. */
  private earlierClaims(): Set<number> {
    const earlier = new Set<number>();
    for (const name of readdirSync(this.dir)) {
      const id = parseClaimFileName(name);
      if (id?.slice !== undefined && id.band === this.step.band && id.generation === this.step.generation && this.earlierClaim(join(this.dir, name))) earlier.add(id.slice);
    }
    return earlier;
  }

  /** Whether the claim at `path` is an earlier attempt's of this part. */
  private earlierClaim(path: string): boolean {
    const holder = readClaim(path);
    return holder !== undefined && holder.part === this.part && holder.attempt !== this.attempt;
  }
}

/** The part and attempt a claim names; undefined for a file that does not read as a claim (read
 *  without following a link, without waiting on a FIFO, at most CLAIM_MAX_BYTES). */
export function readClaim(path: string): { part: number; attempt: string } | undefined {
  let fd: number;
  try {
    fd = openSync(path, STORE_READ_FLAGS);
  } catch {
    return undefined;
  }
  try {
    const bytes = Buffer.alloc(CLAIM_MAX_BYTES + 1);
    const got = readSync(fd, bytes, 0, bytes.length, 0);
    const m = CLAIM_TEXT.exec(bytes.toString('latin1', 0, got));
    return m ? { part: Number(m[1]), attempt: m[2]! } : undefined;
  } catch {
    return undefined; // a folder (EISDIR) and the like: not a claim
  } finally {
    closeSync(fd);
  }
}
