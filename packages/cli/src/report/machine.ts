/** The machine a result was measured on, carried in every --json result and shown in reports. */
import { availableParallelism, cpus } from 'node:os';
import { loadNativeModule } from '@ccheckers/solver';

export interface MachineDetails {
  cpu: string;
  /** 'fast', 'microcoded (slow)', 'no', or 'unknown' where the addon did not load. */
  bmi2: string;
  node: string;
  platform: string;
  hardwareThreads: number;
  /** ISO 8601, when the result was produced. */
  date: string;
}

export async function machineDetails(): Promise<MachineDetails> {
  const cpu = (await loadNativeModule())?.nativeStatus().cpu;
  return {
    cpu: cpus()[0]?.model.trim() || 'unknown CPU',
    bmi2: !cpu ? 'unknown' : !cpu.bmi2 ? 'no' : cpu.fastBmi2 ? 'fast' : 'microcoded (slow)',
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    hardwareThreads: availableParallelism(),
    date: new Date().toISOString(),
  };
}
