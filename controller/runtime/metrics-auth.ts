// Authentication and authorization of /metrics, as controller-runtime's metrics server offers them
// (filters.WithAuthenticationAndAuthorization, https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/metrics/filters/filters.go):
// the bearer token is checked with a TokenReview, its user with a SubjectAccessReview for the non-resource URL
// (verb from the HTTP method, "get"), and the answers are cached as there (authenticated tokens 1 minute; allowed
// 5 minutes, denied 30 seconds). Without a valid token 401, without the right 403; the metrics, which name every
// DaemonSet, are served to those only. The request of a client that is not allowed never reaches the registry.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { resources } from '../../src/k8s/resources.ts';
import { type KubeClient } from '../../src/k8s/client.ts';
import type { KubeObject } from '../../src/k8s/types.ts';

/** Cache lifetimes of controller-runtime's filter (its DelegatingAuthenticatorConfig and DelegatingAuthorizerConfig). */
export const AUTHN_CACHE_TTL_MS = 60_000;
export const AUTHZ_ALLOW_TTL_MS = 5 * 60_000;
export const AUTHZ_DENY_TTL_MS = 30_000;
/** Entries each cache holds at most: tokens are chosen by clients, the memory they cost must not be. */
export const AUTH_CACHE_MAX_ENTRIES = 1_000;

export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export type AuthDecision = { allowed: true; user: string } | { allowed: false; code: 401 | 403 | 500; message: string };

export interface RequestAuthorizer {
  /** Decides for one request: its Authorization header, its path and method. */
  authorize(authorization: string | undefined, path: string, method: string): Promise<AuthDecision>;
}

/** A small map with a lifetime per entry and a bound on entries (the oldest go first). */
class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  constructor(private readonly now: () => number) {}
  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires > this.now()) return e.value;
    this.entries.delete(key);
    return undefined;
  }
  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (this.entries.size >= AUTH_CACHE_MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, expires: this.now() + ttlMs });
  }
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: UserInfo;
  error?: string;
}

/**
 * A RequestAuthorizer that asks the apiserver, through `client` (its own rate limit applies: a flood of bad tokens
 * costs the apiserver no more than the client's QPS, and those tokens are not cached).
 */
export function delegatingAuthorizer(client: KubeClient, logger: Logger, now = Date.now): RequestAuthorizer {
  const users = new ExpiringCache<UserInfo>(now);
  const decisions = new ExpiringCache<boolean>(now);
  const authenticate = async (token: string): Promise<UserInfo | undefined> => {
    const key = createHash('sha256').update(token).digest('hex');
    const cached = users.get(key);
    if (cached) return cached;
    const review = await client.create<KubeObject & { status?: TokenReviewStatus }>(resources.tokenReviews, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      metadata: {},
      spec: { token },
    });
    const user = review.status?.authenticated ? review.status.user : undefined;
    if (user?.username) users.set(key, user, AUTHN_CACHE_TTL_MS);
    return user?.username ? user : undefined;
  };
  const allowed = async (user: UserInfo, path: string, verb: string): Promise<boolean> => {
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, path, verb]);
    const cached = decisions.get(key);
    if (cached !== undefined) return cached;
    const review = await client.create<KubeObject & { status?: { allowed?: boolean } }>(
      resources.subjectAccessReviews,
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        metadata: {},
        spec: {
          user: user.username,
          ...(user.uid ? { uid: user.uid } : {}),
          ...(user.groups ? { groups: user.groups } : {}),
          ...(user.extra ? { extra: user.extra } : {}),
          nonResourceAttributes: { path, verb },
        },
      },
    );
    const yes = review.status?.allowed === true;
    decisions.set(key, yes, yes ? AUTHZ_ALLOW_TTL_MS : AUTHZ_DENY_TTL_MS);
    return yes;
  };
  return {
    async authorize(authorization, path, method) {
      const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
      if (!token) return { allowed: false, code: 401, message: 'Unauthorized: a bearer token is required' };
      try {
        const user = await authenticate(token);
        if (!user) return { allowed: false, code: 401, message: 'Unauthorized: the token was not accepted' };
        const verb = method.toLowerCase();
        if (!(await allowed(user, path, verb)))
          return {
            allowed: false,
            code: 403,
            message: `Forbidden: user "${user.username}" cannot ${verb} path "${path}"`,
          };
        return { allowed: true, user: user.username };
      } catch (err) {
        logger.warn({ err, path }, 'metrics: authentication or authorization failed');
        return { allowed: false, code: 500, message: 'Internal Server Error: authorization could not be checked' };
      }
    },
  };
}
