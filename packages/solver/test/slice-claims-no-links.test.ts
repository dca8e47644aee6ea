/**
 * A store on a filesystem without hard links (SMB, FAT): a shared step's claims (slice-claims.ts)
 * fail with a message that says what to do, not an errno alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

// link() refused as such a filesystem refuses it.
vi.mock('node:fs/promises', async (importOriginal) => ({
  ...(await importOriginal<typeof import('node:fs/promises')>()),
  link: async () => {
    throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
  },
}));
const { DatabaseError } = await import('../src/database.js');
const { SliceClaims } = await import('../src/store/slice-claims.js');

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-claims-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('slice claims in a folder without hard links', () => {
  it('are refused with what to do', async () => {
    const claims = new SliceClaims(dir, { band: 0, generation: 1 }, 0, 'aaaaaaaa', 4);
    const failure = claims.next();
    await expect(failure).rejects.toThrow(DatabaseError);
    await expect(failure).rejects.toThrow(/claim-b00000\.g1\.s0: a shared step claims its slices with hard links, which this folder refuses \(EPERM\): put the store on a filesystem with hard links \(ext4, xfs, NFS\), or solve with --schedule segments/);
  });
});
