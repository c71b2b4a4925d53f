// CpuMeter reads the CPU time a set of processes (or the benchmark itself) spends over a window.
import { cpuSecondsOf } from './child.ts';

export interface CpuMeter {
  /** seconds is the CPU time spent since the meter started; null if a process vanished. */
  seconds(): number | null;
}

/** meterProcesses sums utime + stime of the given PIDs (e.g. etcd, kube-apiserver, kube-controller-manager). */
export function meterProcesses(pids: readonly number[]): CpuMeter {
  const read = (): number | null => {
    let total = 0;
    for (const pid of pids) {
      const s = cpuSecondsOf(pid);
      if (s === null) return null;
      total += s;
    }
    return total;
  };
  const start = read();
  return {
    seconds: () => {
      const now = read();
      return start === null || now === null ? null : now - start;
    },
  };
}

/** meterSelf measures the benchmark's own process. */
export function meterSelf(): CpuMeter {
  const start = process.cpuUsage();
  return {
    seconds: () => {
      const d = process.cpuUsage(start);
      return (d.user + d.system) / 1e6;
    },
  };
}

/** perThousand is CPU seconds per 1,000 events, null when unknown. */
export function perThousand(seconds: number | null, events: number): number | null {
  return seconds === null || events === 0 ? null : (seconds * 1000) / events;
}
