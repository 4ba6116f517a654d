// What the user reads when something fails: kubectl's wording (`Error from server (NotFound): ...`, `Unable to connect
// to the server: ...`), and for a 403 which permission is missing and how to check it. Never a stack trace.
import { ApiError, TransportError } from '../src/k8s/errors.ts';

/** A failure whose message is for the user as is (`error: <message>`), with the exit code to end with. */
export class PluginError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'PluginError';
  }
}

/** What a REST path names: /apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/x/status. */
export interface PathTarget {
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

export function parseResourcePath(path: string): PathTarget | undefined {
  const clean = path.split('?')[0] ?? '';
  const m =
    /^\/(?:api\/[^/]+|apis\/([^/]+)\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/.exec(
      clean,
    );
  if (!m) return undefined;
  const t: PathTarget = { group: m[1] ?? '', resource: m[3] as string };
  if (m[2]) t.namespace = decodeURIComponent(m[2]);
  if (m[4]) t.name = decodeURIComponent(m[4]);
  if (m[5]) t.subresource = m[5];
  return t;
}

/** The verb RBAC checks for a client call (the client's "list" of a collection with ?watch is "watch"). */
const RBAC_VERB: Record<string, string> = {
  get: 'get',
  list: 'list',
  watch: 'watch',
  create: 'create',
  update: 'update',
  patch: 'patch',
  delete: 'delete',
};

/**
 * The missing permission of a 403, from the apiserver's own message when it has the RBAC form ("User "u" cannot
 * patch resource "daemonsets" in API group "apps.kruise.io" in the namespace "ns"": the authorizer's words,
 * k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage), else from the request.
 */
export function missingPermission(
  err: ApiError,
): { verb: string; resource: string; namespace?: string; user?: string } | undefined {
  const msg = err.status?.message ?? '';
  const m =
    /(?:User "([^"]*)" )?cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?/.exec(
      msg,
    );
  if (m) {
    const [, user, verb, resource, group, namespace] = m;
    return {
      verb: verb as string,
      resource: group ? `${resource}.${group}` : (resource as string),
      ...(namespace ? { namespace } : {}),
      ...(user ? { user } : {}),
    };
  }
  const target = parseResourcePath(err.path);
  if (!target) return undefined;
  const resource = target.group ? `${target.resource}.${target.group}` : target.resource;
  return {
    verb: RBAC_VERB[err.verb] ?? err.verb,
    resource: target.subresource ? `${resource}/${target.subresource}` : resource,
    ...(target.namespace ? { namespace: target.namespace } : {}),
  };
}

/** The lines printed for an error (without the trailing newline), and the exit code. */
export function explainError(err: unknown): { text: string; exitCode: number } {
  if (err instanceof PluginError) return { text: `error: ${err.message}`, exitCode: err.exitCode };
  if (err instanceof ApiError) {
    const message = err.status?.message || err.message;
    if (err.code === 401) return { text: 'error: You must be logged in to the server (Unauthorized)', exitCode: 1 };
    if (err.code === 403) {
      const p = missingPermission(err);
      const lines = [`Error from server (Forbidden): ${message}`];
      if (p) {
        const where = p.namespace ? ` in namespace "${p.namespace}"` : ' cluster-wide';
        const ns = p.namespace ? ` -n ${p.namespace}` : '';
        lines.push(
          `  missing permission: ${p.user ? `user "${p.user}" ` : ''}may not "${p.verb}" ${p.resource}${where}.`,
          `  Ask a cluster administrator for a Role granting it; check with: kubectl auth can-i ${p.verb} ${p.resource}${ns}`,
        );
      }
      return { text: lines.join('\n'), exitCode: 1 };
    }
    return { text: `Error from server (${err.reason}): ${message}`, exitCode: 1 };
  }
  if (err instanceof TransportError) {
    const cause = (err.cause as Error | undefined)?.message ?? err.message;
    return { text: `Unable to connect to the server: ${cause}`, exitCode: 1 };
  }
  if (err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError'))
    return { text: `error: ${err.message}`, exitCode: 1 };
  return {
    text: `error: unexpected failure (this is a bug in kubectl-ads, please report it): ${
      err instanceof Error ? (err.stack ?? err.message) : String(err)
    }`,
    exitCode: 70,
  };
}
