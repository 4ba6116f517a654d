// A manager's log as JSON records: what the e2e helpers, the tests and the benchmarks read from it. Apart from
// ads.ts (which re-exports it), so that a process that runs no test can load it without node:test.
import { readFileSync } from 'node:fs';

export interface LogLine {
  msg?: string;
  level?: number;
  time?: number;
  [k: string]: unknown;
}

/** The JSON (pino) lines of a log file; other lines are skipped. */
export function readLogLines(file: string): LogLine[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: LogLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line being written
    }
  }
  return out;
}
