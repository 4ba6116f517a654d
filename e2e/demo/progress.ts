// A one-line rollout progress display: redrawn in place on a terminal, one line per change
// otherwise (CI logs), never a log flood.
export interface RolloutCounts {
  desired: number;
  updated: number;
  ready: number;
  available: number;
}

export function progressBar(c: RolloutCounts, width = 20): string {
  const frac = c.desired > 0 ? Math.min(1, c.updated / c.desired) : 1;
  const filled = Math.round(frac * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

export function progressLine(label: string, c: RolloutCounts): string {
  return `${label} ${progressBar(c)} updated ${c.updated}/${c.desired}  ready ${c.ready}/${c.desired}  available ${c.available}/${c.desired}`;
}

export class ProgressPrinter {
  private last = '';
  constructor(private readonly out: NodeJS.WriteStream = process.stdout) {}

  update(line: string): void {
    if (line === this.last) return;
    this.last = line;
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${line}`);
    else this.out.write(`${line}\n`);
  }

  done(): void {
    if (this.out.isTTY && this.last) this.out.write('\n');
    this.last = '';
  }
}
