// Upstream's slowStartBatch (https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/daemon/daemon_controller.go,
// syncNodes): calls go out in batches of growing size, each batch in parallel, and stop after the first batch with a
// failure, so a quota or admission problem costs one request, not hundreds. The sizes come from the caller (the
// planner's slowStartBatches).

export interface SlowStartResult {
  /** The failures of the last batch run, and the abort reason when `signal` ended the run. */
  errors: unknown[];
  /** Items never called: after a failing batch, or after `signal` aborted. */
  notStarted: number;
}

/**
 * Calls `call` on `items` in batches of `sizes` (their sum must be items.length). Stops after a batch in which a call
 * rejected, and before starting a batch once `signal` aborted (calls already in flight finish).
 */
export async function slowStartBatch<T>(
  items: readonly T[],
  sizes: readonly number[],
  call: (item: T) => Promise<void>,
  signal?: AbortSignal,
): Promise<SlowStartResult> {
  let pos = 0;
  for (const size of sizes) {
    if (signal?.aborted) return { errors: [signal.reason], notStarted: items.length - pos };
    const results = await Promise.allSettled(items.slice(pos, pos + size).map(call));
    pos += size;
    const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    if (errors.length > 0) return { errors, notStarted: items.length - pos };
  }
  return { errors: [], notStarted: items.length - pos };
}
