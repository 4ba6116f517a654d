// The one sleep and the one polling wait of the tests (unit and e2e) and tools. In src/ so that tests of every
// folder can import it (src/ imports nothing outside src/; test/imports.test.ts).

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface WaitOptions {
  /** Give up after this long (default 5 s). */
  timeoutMs?: number;
  /** Between two checks (default 5 ms). */
  intervalMs?: number;
}

/**
 * Polls `check` until it returns a value other than undefined/false, and returns that value; throws when the time
 * is up, saying what was awaited and what was last seen (an error thrown by `check` counts as seen, and polling goes
 * on), so a red test explains itself. `options` as a number is the timeout.
 */
export async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitOptions | number = {},
): Promise<T> {
  const { timeoutMs = 5_000, intervalMs = 5 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (performance.now() > deadline) {
      const seen = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}; last seen: ${seen}`);
    }
    await sleep(intervalMs);
  }
}
