// CPU seconds and memory of a process from /proc (Linux), so a measurement never depends on the
// process cooperating (the KCM and our manager are read the same way).
import { readFileSync } from 'node:fs';

const CLOCK_TICKS = 100; // USER_HZ is 100 on every Linux we run on

/** utime + stime in seconds, or NaN when the process is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may contain spaces).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

function statusKiB(pid: number, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Peak resident set size since the process started (VmHWM), MiB. */
export const peakRssMiB = (pid: number) => statusKiB(pid, 'VmHWM') / 1024;
/** Current resident set size (VmRSS), MiB. */
export const rssMiB = (pid: number) => statusKiB(pid, 'VmRSS') / 1024;
