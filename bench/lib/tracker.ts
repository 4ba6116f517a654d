// A list+watch mirror of one resource in one namespace, kept by the benchmark itself so that "done"
// is judged from what the apiserver holds, the same way for every controller. Each change calls the
// listeners; `until` resolves at the first change after which a predicate holds.
import { isGone } from '../../src/k8s/errors.ts';
import { type KubeClient, type WatchEvent } from '../../src/k8s/client.ts';
import { type ResourceType } from '../../src/k8s/resources.ts';
import type { KubeObject } from '../../src/k8s/types.ts';
import { say } from './stats.ts';

export class Tracker<T extends KubeObject = KubeObject> {
  readonly objects = new Map<string, T>();
  private readonly listeners = new Set<(event?: WatchEvent<T>) => void>();
  private readonly stop = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly type: ResourceType,
    private readonly namespace?: string,
  ) {}

  async start(): Promise<void> {
    let rv = await this.relist();
    this.running = (async () => {
      while (!this.stop.signal.aborted) {
        try {
          await this.client.watch<T>(
            this.type,
            { namespace: this.namespace, resourceVersion: rv, timeoutSeconds: 300, signal: this.stop.signal },
            (e: WatchEvent<T>) => {
              // An ERROR event ends what this watch can tell (e.g. the apiserver could not convert an object while
              // the CRD's conversion webhook moved): list again, as a reflector does, or changes are missed.
              if (e.type === 'ERROR') throw new Error(`watch error event: ${JSON.stringify(e.object)}`);
              if (e.type === 'BOOKMARK') return;
              const key = e.object.metadata?.name ?? '';
              rv = e.object.metadata?.resourceVersion ?? rv;
              if (e.type === 'DELETED') this.objects.delete(key);
              else this.objects.set(key, e.object);
              for (const l of this.listeners) l(e);
            },
          );
        } catch (err) {
          if (this.stop.signal.aborted) return;
          if (!isGone(err)) say(`watch of ${this.type.resource} restarted: ${(err as Error).message}`);
          rv = await this.relist().catch(async () => {
            // Not listable yet (the same conversion failing): try again shortly rather than at once.
            await new Promise((r) => setTimeout(r, 500));
            return rv;
          });
        }
      }
    })();
  }

  private async relist(): Promise<string | undefined> {
    const list = await this.client.list<T>(this.type, { namespace: this.namespace });
    this.objects.clear();
    for (const o of list.items) this.objects.set(o.metadata?.name ?? '', o);
    for (const l of this.listeners) l();
    return list.metadata.resourceVersion;
  }

  /** `listener` gets each watch event, or nothing after a relist. */
  onChange(listener: (event?: WatchEvent<T>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.stop.abort();
  }
}

/**
 * Resolves with the wall-clock time (ms) of the first tracker change after which `done()` is true,
 * checking at once too. `progress()` is printed every few seconds; the timeout error says what was seen.
 */
export function until(
  trackers: { onChange(listener: () => void): () => void }[],
  what: string,
  done: () => boolean,
  progress: () => string,
  timeoutMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const offs: (() => void)[] = [];
    let lastPrint = Date.now();
    const finish = (err?: Error) => {
      clearInterval(timer);
      for (const off of offs) off();
      if (err) reject(err);
      else resolve(Date.now());
    };
    const check = () => {
      if (done()) finish();
    };
    const deadline = Date.now() + timeoutMs;
    const timer = setInterval(() => {
      if (Date.now() > deadline)
        finish(new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}; last seen: ${progress()}`));
      else if (Date.now() - lastPrint >= 5000) {
        lastPrint = Date.now();
        say(`  ${what}: ${progress()}`);
      }
    }, 250);
    for (const t of trackers) offs.push(t.onChange(check));
    check();
  });
}
