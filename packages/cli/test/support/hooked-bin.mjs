// The tests' harness around the real program: main() of dist/main.js with TestHooks that inject
// faults. Usage: node hooked-bin.mjs '<hooks JSON>' <ccheckers arguments...>
//   {"killAfterPass": N}        SIGKILL once the checkpoint after pass N is on disk
//   {"killInPass": N}           SIGKILL once a checkpoint inside pass N is on disk
//   {"killInDistances": N}      SIGKILL once a checkpoint of the distances from layer N on is on disk
//   {"createAtOutAfterPass": N} after that checkpoint, a user's file appears at --out
//   {"createAtHtmlAfterPass": N} after that checkpoint, a user's file appears at --html
//   {"corruptBackend": NAME}    verify: that backend answers one operation wrongly
//   {"killAfterSave": N}        solve --store: SIGKILL right after the N-th save of the store
//   {"killAfterCommit": N}      solve --redis: SIGKILL right after the N-th manifest write
//   {"killBeforeCommit": N}     solve --redis: SIGKILL right before the N-th manifest write (the
//                               pass's merges written, the manifest not yet naming them)
//   {"killOnJob": N}            worker: SIGKILL at the start of its N-th job (says which on stderr)
//   {"killAfterJobWork": N}     worker: SIGKILL when its N-th job's files are written, before
//                               BullMQ hears of it (says which on stderr)
//   {"pauseOnJob": N, "until": PATH} worker: at the start of its N-th job says "paused on job ID" on
//                               stderr and waits until PATH exists (signals meanwhile are handled
//                               as the job goes on)
//   {"diskFullAfterBytes": N}   every fs.writeSync to a file fails with ENOSPC once N bytes are
//                               written (the disk full; the modules' named imports see it too)
import fs, { writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { jobId } from '@ccheckers/solver';
import { main } from '../../dist/main.js';

const [spec, ...args] = process.argv.slice(2);
const wanted = JSON.parse(spec);
if (wanted.diskFullAfterBytes !== undefined) {
  const writeSync = fs.writeSync;
  let room = wanted.diskFullAfterBytes;
  fs.writeSync = (fd, data, ...rest) => {
    if (fd > 2) {
      const length = typeof data === 'string' ? Buffer.byteLength(data) : typeof rest[1] === 'number' ? rest[1] : data.byteLength - (rest[0] ?? 0);
      if (length > room) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
      room -= length;
    }
    return writeSync(fd, data, ...rest);
  };
  syncBuiltinESMExports();
}
const out = args[args.indexOf('--out') + 1];
const html = args[args.indexOf('--html') + 1];
let saves = 0;
let commits = 0;
let jobs = 0;
const killOnJob = (n, job) => {
  if (n !== undefined && ++jobs >= n) {
    writeFileSync(2, `killed on job ${jobId(job)}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
};
let started = 0;
const pauseOnJob = (job) => {
  if (wanted.pauseOnJob === undefined || ++started !== wanted.pauseOnJob) return;
  writeFileSync(2, `paused on job ${jobId(job)}\n`);
  const nap = new Int32Array(new SharedArrayBuffer(4));
  while (!fs.existsSync(wanted.until)) Atomics.wait(nap, 0, 0, 20);
};
const hooks = {
  beforeClusterCommit() {
    if (wanted.killBeforeCommit !== undefined && ++commits >= wanted.killBeforeCommit) process.kill(process.pid, 'SIGKILL');
  },
  onClusterCommit() {
    if (wanted.killAfterCommit !== undefined && ++commits >= wanted.killAfterCommit) process.kill(process.pid, 'SIGKILL');
  },
  onJobStart: (job) => {
    pauseOnJob(job);
    killOnJob(wanted.killOnJob, job);
  },
  onJobWorked: (job) => killOnJob(wanted.killAfterJobWork, job),
  onStoreSave() {
    if (wanted.killAfterSave !== undefined && ++saves >= wanted.killAfterSave) process.kill(process.pid, 'SIGKILL');
  },
  ...(wanted.corruptBackend ? { corruptBackend: wanted.corruptBackend } : {}),
  onCheckpoint(passes, inPass, distanceLayer) {
    if (wanted.killInDistances !== undefined && distanceLayer >= wanted.killInDistances) process.kill(process.pid, 'SIGKILL');
    if (wanted.killAfterPass !== undefined && passes >= wanted.killAfterPass) process.kill(process.pid, 'SIGKILL');
    if (wanted.killInPass !== undefined && inPass?.pass === wanted.killInPass) process.kill(process.pid, 'SIGKILL');
    if (wanted.createAtOutAfterPass !== undefined && passes === wanted.createAtOutAfterPass) writeFileSync(out, 'a file of the user\n');
    if (wanted.createAtHtmlAfterPass !== undefined && passes === wanted.createAtHtmlAfterPass) writeFileSync(html, 'a page of the user\n');
  },
};
process.exitCode = await main([process.argv[0], 'ccheckers', ...args], hooks);
