/**
 * Parsing and checking of the options the commands share. Every problem is a UsageError
 * (exit 2) whose message names the option and what is allowed.
 */
import { availableParallelism } from 'node:os';
import { CCheckersError, RULE_MODES, type RuleMode, type Variant, supportedVariants, variant } from '@ccheckers/core';
import { BACKEND_REQUESTS, type BackendRequest, parseSize } from '@ccheckers/solver';

export class UsageError extends CCheckersError {
  constructor(message: string) {
    super('E_USAGE', message);
  }
}

export function integer(name: string, text: string, min: number, max: number): number {
  if (!/^\s*\d+\s*$/.test(text)) throw new UsageError(`${name} must be a whole number, got "${text}"`);
  const n = Number(text);
  // Echoed as typed: Number() would show 99999999999999999999 as 1e+20.
  if (n < min || n > max) throw new UsageError(`${name} must be between ${min} and ${max}, got ${text.trim()}`);
  return n;
}

/** The variant of --board/--pieces, with the supported list in the message when it is not one. */
export function variantOption(board: string, pieces: string): Variant {
  const m = integer('--board', board, 1, 99);
  const k = integer('--pieces', pieces, 1, 99);
  const ok = supportedVariants().some((s) => s.size === m && s.pieces === k);
  if (!ok) {
    const sizes = [...new Set(supportedVariants().map((s) => s.size))];
    const forBoard = supportedVariants().filter((s) => s.size === m).map((s) => s.pieces);
    throw new UsageError(
      sizes.includes(m)
        ? `${m}x${m} with ${k} pieces is not a supported variant (pieces on ${m}x${m}: ${forBoard.join(', ')})`
        : `board ${m} is not supported (board sizes: ${sizes.join(', ')})`,
    );
  }
  return variant(m, k);
}

export function rulesOption(text: string): RuleMode {
  if (!(RULE_MODES as readonly string[]).includes(text)) throw new UsageError(`--rules must be one of ${RULE_MODES.join(', ')}, got "${text}"`);
  return text as RuleMode;
}

export function backendOption(text: string): BackendRequest {
  if (!(BACKEND_REQUESTS as readonly string[]).includes(text)) {
    throw new UsageError(`--backend must be one of ${BACKEND_REQUESTS.join(', ')}, got "${text}"`);
  }
  return text as BackendRequest;
}

export function backendList(text: string): BackendRequest[] {
  const names = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) throw new UsageError('--backends needs at least one backend name');
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new UsageError(`--backends names ${twice} twice: each backend is compared or measured once`);
  return names.map((n) => {
    if (n === 'auto' || !(BACKEND_REQUESTS as readonly string[]).includes(n)) {
      throw new UsageError(`--backends: unknown backend "${n}" (choose from ${BACKEND_REQUESTS.filter((b) => b !== 'auto').join(', ')})`);
    }
    return n as BackendRequest;
  });
}

export function threadsOption(text: string | undefined): number {
  return text === undefined ? availableParallelism() : integer('--threads', text, 1, 1024);
}

/** --threads, capped at the hardware threads (more only wait, and 1000 of them made a 7x7/1
 *  solve take 28.6 s instead of 0.04 s); `cappedFrom` is what was asked when capped. */
export function cappedThreads(text: string | undefined): { count: number; cappedFrom?: number } {
  const asked = threadsOption(text);
  const cores = availableParallelism();
  return asked > cores ? { count: cores, cappedFrom: asked } : { count: asked };
}

export function memoryOption(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  try {
    return parseSize(text);
  } catch {
    throw new UsageError(`--memory: invalid size "${text}" (e.g. 512M, 4G)`);
  }
}
