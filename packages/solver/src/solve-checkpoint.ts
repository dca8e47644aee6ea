/**
 * An in-memory solve's checkpoint (`OUT.ckpt`, a database file of stage 'init' or 'checkpoint'):
 * its header, and what a resume reads from it and refuses. solve.ts writes one after the init,
 * after each pass, inside a pass and between distance layers.
 */
import { closeSync } from 'node:fs';
import { CCheckersError, MAX_DISTANCE, RANKING_ID, type RuleMode, type StateSpace, type TableBytes, type Variant } from '@ccheckers/core';
import { openForReading, readDatabase, readHeader } from './database.js';
import { layersSeen } from './distance-table.js';
import { type PassRecord, passesDone } from './pass-log.js';

/** The distance layers a checkpoint holds, the next one's depth given, as the progress numbers
 *  them (0 the ends of the game, d + 1 the one pushing distance d). */
export function distanceLayers(depth: number): string {
  return depth === 0 ? 'distance layer 0' : `distance layers 0-${depth}`;
}

/** The header of a solve's checkpoint or database (counts and start value filled in at the end). */
export function headerFor(
  v: Variant,
  rules: RuleMode,
  stage: 'init' | 'checkpoint' | 'complete',
  passes: number,
  space: StateSpace,
  seconds: number,
  passLog: PassRecord[],
  startValue: number,
) {
  return {
    board: v.size,
    pieces: v.pieces,
    rules,
    rankingId: RANKING_ID,
    stage,
    startValue,
    passes,
    storedStates: space.states,
    positions: 0,
    p1Wins: 0,
    p2Wins: 0,
    draws: 0,
    illegal: 0,
    seconds,
    passLog,
    maxDistance: 0,
  };
}

/** What a resume goes on from. */
export interface Checkpoint {
  table: TableBytes;
  /** The finished passes, and `unfinished` the pass a checkpoint inside a pass caught partway. */
  passLog: PassRecord[];
  unfinished: PassRecord | undefined;
  /** The solve's seconds before it. */
  seconds: number;
  /** A checkpoint of the distances (every pass done): their table, the layer to go on with, and
   *  the won and lost states it has placed. */
  distances: TableBytes | undefined;
  resumedDistances: { depth: number; assigned: number } | undefined;
}

/**
 * Reads the checkpoint at `path` for a resume of `v` under `rules` (tables from `allocate`; past
 * the page cache through `staging`, direct-io.ts), after checkResumable, and refuses a pass log or
 * distances that do not fit together.
 */
export function readCheckpoint(path: string, v: Variant, rules: RuleMode, withDistances: boolean, allocate: (bytes: number) => TableBytes, staging?: Uint8Array): Checkpoint {
  checkResumable(path, v, rules, withDistances);
  const { header, table, distances } = readDatabase(path, allocate, withDistances, staging);
  const passLog = header.passLog;
  const unfinished = passLog[passLog.length - 1]?.unitsDone !== undefined ? passLog.pop() : undefined;
  if (header.passes !== passLog.length || passLog.some((r, i) => r.pass !== i + 1 || r.unitsDone !== undefined) || (unfinished && unfinished.pass !== passLog.length + 1)) {
    throw new CCheckersError('E_DATABASE', `${path}: its pass log does not match its ${header.passes} finished passes`);
  }
  const done = passesDone(passLog);
  if (done && unfinished) throw new CCheckersError('E_DATABASE', `${path}: its pass log goes on after a pass that proved nothing`);
  let resumedDistances: Checkpoint['resumedDistances'];
  if (distances) {
    if (!done) {
      throw new CCheckersError('E_DATABASE', `${path}: it holds distances, but its pass log does not end with a pass that proved nothing`);
    }
    if (!(header.maxDistance < MAX_DISTANCE)) {
      throw new CCheckersError('E_DATABASE', `${path}: it holds distances from layer ${header.maxDistance} on, past the last one (${MAX_DISTANCE - 1})`);
    }
    // The layers it holds end where it says: layer `depth` pushes from the states at that distance
    // to parents one deeper, so its distances end at `depth` (the layer to run next) or, the
    // layer partly done, at `depth + 1`; none deeper. (A forged depth would make a resume place
    // states at the wrong distances.)
    const depth = header.maxDistance;
    const seen = layersSeen(distances, depth + 1);
    if (seen.deeper || !(depth === 0 || seen.atDepth || seen.atDepthBefore)) {
      throw new CCheckersError('E_DATABASE', `${path}: its distances do not end at the layer it names (${depth}): ${seen.deeper ? `some are deeper than ${depth + 1}` : `none is ${depth} or ${depth + 1}`}`);
    }
    resumedDistances = { depth, assigned: seen.placed };
  }
  return { table, passLog, unfinished, seconds: header.seconds, distances, resumedDistances };
}

/**
 * Refuses, from its header alone (before reading a table of GiBs), a checkpoint a resume cannot
 * go on from: one of another variant or rule mode, a complete database under the checkpoint's
 * name, or one holding distances resumed without --distances (which would drop them: hours of
 * layers on 7x7/4).
 */
function checkResumable(path: string, v: Variant, rules: RuleMode, distances: boolean): void {
  const fd = openForReading(path);
  try {
    const { header } = readHeader(path, fd);
    if (header.board !== v.size || header.pieces !== v.pieces || header.rules !== rules) {
      throw new CCheckersError('E_USAGE', `${path} is a checkpoint of ${header.board}x${header.board}/${header.pieces} (${header.rules}), not ${v.name} (${rules})`);
    }
    if (header.stage === 'complete') throw new CCheckersError('E_DATABASE', `${path} is a complete database, not a checkpoint`);
    if (header.distanceBytes > 0 && !distances) {
      throw new CCheckersError(
        'E_USAGE',
        `${path} holds ${distanceLayers(header.maxDistance)}: continue with --resume --distances, or start over with --force`,
      );
    }
  } finally {
    closeSync(fd);
  }
}
