/**
 * Which machine this process runs on, as locks and leases across machines name it: host name,
 * boot and pid namespace. A process id means something only on the machine that gave it; the
 * same host name after a reboot, or in a container with its own pids, is another machine here.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

let machine: string | undefined;

/** `host:boot:pidns` (boot and pidns are `?` where unknown: not Linux). Read on first use. */
export function thisMachine(): string {
  const read = (f: () => string) => {
    try {
      return f().replace(/[^0-9a-zA-Z-]/g, '');
    } catch {
      return '?';
    }
  };
  machine ??= `${hostname()}:${read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').slice(0, 8))}:${read(() => readlinkSync('/proc/self/ns/pid'))}`;
  return machine;
}

/** The host name in a `thisMachine()` string (host names hold no colon; this reads one that does). */
export function hostOf(machineId: string): string {
  const at = machineId.lastIndexOf(':', machineId.lastIndexOf(':') - 1);
  return at < 0 ? machineId : machineId.slice(0, at);
}
