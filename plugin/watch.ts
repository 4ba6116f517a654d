// List, then watch from the list's resourceVersion, keeping a map of the objects, and call `onChange` after each
// change; on the server's routine end of a watch, watch again from the last version seen; on 410 Gone, or after a
// broken connection, list again (client-go's reflector, reduced to what `status --watch` needs). Ends when `signal`
// aborts; an API error other than 410 (403, 404 of the resource type) ends it with that error.
import { isGone, TransportError } from '../src/k8s/errors.ts';
import { type KubeClient } from '../src/k8s/client.ts';
import { type ResourceType } from '../src/k8s/resources.ts';
import type { KubeObject } from '../src/k8s/types.ts';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ListWatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  signal: AbortSignal;
}

export async function listWatch<T extends KubeObject>(
  client: KubeClient,
  type: ResourceType,
  opts: ListWatchOptions,
  onChange: (objects: ReadonlyMap<string, T>) => void,
): Promise<void> {
  const { signal, ...query } = opts;
  const objects = new Map<string, T>();
  const key = (o: T) => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
  while (!signal.aborted) {
    let rv: string | undefined;
    try {
      const list = await client.list<T>(type, { ...query, signal });
      objects.clear();
      for (const o of list.items) objects.set(key(o), o);
      rv = list.metadata.resourceVersion;
      onChange(objects);
      for (;;) {
        let gone = false;
        await client.watch<T>(type, { ...query, resourceVersion: rv, timeoutSeconds: 240, signal }, (ev) => {
          if (ev.type === 'ERROR') {
            gone = true;
            return;
          }
          const o = ev.object;
          if (o.metadata.resourceVersion) rv = o.metadata.resourceVersion;
          if (ev.type === 'BOOKMARK') return;
          if (ev.type === 'DELETED') objects.delete(key(o));
          else objects.set(key(o), o);
          onChange(objects);
        });
        if (gone || signal.aborted) break;
      }
    } catch (err) {
      if (signal.aborted) return;
      if (!isGone(err) && !(err instanceof TransportError)) throw err;
      await sleep(1000, undefined, { signal }).catch(() => {});
    }
  }
}
