// Pieces of a fake Kubernetes REST API over node:http, shared by the in-process fake apiserver of the unit tests
// (fake-apiserver.ts) and the simulated apiserver of the benchmarks (bench/lib/sim-apiserver.ts).
import type http from 'node:http';

/** Calls `done` with the request's URL (path and query) and its body as text, once the whole body has arrived. */
export function onRequestBody(req: http.IncomingMessage, done: (url: URL, text: string) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    // Cut off before its end (an HTTP/2 stream whose session closed before END_STREAM ends its body too): a server
    // cannot decode it, and never acts on it.
    if (req.aborted) return;
    done(new URL(req.url ?? '/', 'http://x'), Buffer.concat(chunks).toString('utf8'));
  });
}

/** The store key of an object: namespace/name, or the name of a cluster-scoped one. */
export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * /api/v1/namespaces/ns/pods/name/status or /apis/g/v/... → collection "g/v/pods" ("core/v1/pods"); a group
 * version with no resource (discovery) gives `resourceMissing`; anything else, undefined.
 */
export function parsePath(
  path: string,
):
  | { collection: string; namespace?: string; name?: string; subresource?: string; resourceMissing?: boolean }
  | undefined {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  let gv: string;
  if (parts[0] === 'api' && parts[1]) {
    gv = `core/${parts[1]}`;
    parts.splice(0, 2);
  } else if (parts[0] === 'apis' && parts[1] && parts[2]) {
    gv = `${parts[1]}/${parts[2]}`;
    parts.splice(0, 3);
  } else return undefined;
  let namespace: string | undefined;
  if ((parts[0] as string | undefined) === 'namespaces' && parts.length >= 3) {
    namespace = parts[1];
    parts.splice(0, 2);
  }
  const [resource, name, subresource] = parts;
  if (!resource) return { collection: `${gv}/`, resourceMissing: true };
  return { collection: `${gv}/${resource}`, namespace, name, subresource };
}

export function json(res: http.ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** A metav1.Status failure. */
export function status(res: http.ServerResponse, code: number, reason: string, message: string): void {
  json(res, code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason, message, code });
}
