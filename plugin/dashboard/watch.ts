// A list-then-watch cache of one resource, what client-go's Reflector feeds an informer's store
// (https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/client-go/tools/cache/reflector.go), cut
// down to what a read-only page needs: list, watch from the list's resourceVersion with bookmarks, re-watch when the
// server ends the watch, relist after an error (410 Gone included) with a capped backoff. The controller's own
// reflector lives in controller/runtime, which the plugin may not import.
import { setTimeout as sleep } from 'node:timers/promises';
import { apiErrorFromStatus, type Status } from '../../src/k8s/errors.ts';
import { resourcePath, type ResourceType } from '../../src/k8s/resources.ts';
import { type KubeClient } from '../../src/k8s/client.ts';
import type { KubeObject } from '../../src/k8s/types.ts';

export interface WatchedListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Called after the cache changed (a list replaced it, or a watch event applied). */
  onChange: () => void;
  log?: (line: string) => void;
}

const BACKOFF_INITIAL_MS = 500;
const BACKOFF_MAX_MS = 10_000;

export class WatchedList<T extends KubeObject = KubeObject> {
  private readonly items = new Map<string, T>();
  private hasSynced = false;
  private readonly done: Promise<void>;

  constructor(
    private readonly client: KubeClient,
    private readonly type: ResourceType,
    private readonly opts: WatchedListOptions,
    signal: AbortSignal,
  ) {
    this.done = this.run(signal);
  }

  /** True once the first list arrived. */
  get synced(): boolean {
    return this.hasSynced;
  }

  list(): T[] {
    return [...this.items.values()];
  }

  /** Resolves once the signal given to the constructor aborted and the loop ended. */
  stopped(): Promise<void> {
    return this.done;
  }

  private what(): string {
    const sel = [this.opts.labelSelector, this.opts.fieldSelector].filter(Boolean).join(' ');
    return `${resourcePath(this.type, { namespace: this.opts.namespace })}${sel ? ` (${sel})` : ''}`;
  }

  private async run(signal: AbortSignal): Promise<void> {
    const { namespace, labelSelector, fieldSelector } = this.opts;
    let backoff = BACKOFF_INITIAL_MS;
    while (!signal.aborted) {
      try {
        const list = await this.client.listAll<T>(this.type, { namespace, labelSelector, fieldSelector, signal });
        this.items.clear();
        for (const o of list.items) this.items.set(key(o), o);
        this.hasSynced = true;
        this.opts.onChange();
        let rv = list.metadata.resourceVersion;
        backoff = BACKOFF_INITIAL_MS;
        // Watch until an error; a watch the server ends (its timeout) resumes from the last resourceVersion seen.
        while (!signal.aborted) {
          await this.client.watch<T>(
            this.type,
            {
              namespace,
              labelSelector,
              fieldSelector,
              resourceVersion: rv,
              allowWatchBookmarks: true,
              // As client-go: a server-side timeout between 5 and 10 minutes, so watches do not all end together.
              timeoutSeconds: 300 + Math.floor(Math.random() * 300),
              signal,
            },
            (ev) => {
              if (ev.type === 'ERROR') {
                throw apiErrorFromStatus('watch', this.what(), ev.object as unknown as Status);
              }
              rv = ev.object.metadata.resourceVersion ?? rv;
              if (ev.type === 'BOOKMARK') return;
              if (ev.type === 'DELETED') this.items.delete(key(ev.object));
              else this.items.set(key(ev.object), ev.object);
              this.opts.onChange();
            },
          );
        }
      } catch (err) {
        if (signal.aborted) break;
        this.opts.log?.(`watch of ${this.what()} failed, listing again in ${backoff} ms: ${(err as Error).message}`);
        await sleep(backoff, undefined, { signal }).catch(() => undefined);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }
}

function key(o: KubeObject): string {
  return o.metadata.uid ?? `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
}
