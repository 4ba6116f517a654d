// The caching of metrics-auth.ts, with a client that answers reviews from a table and counts them (the apiserver's
// own answers are checked in e2e/metrics/secure-metrics.e2e.ts): authenticated tokens and decisions are cached for
// controller-runtime's lifetimes, rejected tokens are not, and a failing apiserver gives a 500 with a message.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { KubeClient } from '../../src/k8s/client.ts';
import { AUTHN_CACHE_TTL_MS, AUTHZ_DENY_TTL_MS, delegatingAuthorizer } from './metrics-auth.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

function reviewingClient(users: Record<string, string>, allowed: Set<string>, fail = false) {
  const calls = { tokenReviews: 0, accessReviews: 0 };
  const client = {
    create: async (type: { resource: string }, obj: any) => {
      if (fail) throw new Error('connection refused');
      if (type.resource === 'tokenreviews') {
        calls.tokenReviews++;
        const username = users[obj.spec.token];
        return { ...obj, status: username ? { authenticated: true, user: { username } } : { authenticated: false } };
      }
      calls.accessReviews++;
      return { ...obj, status: { allowed: allowed.has(obj.spec.user) } };
    },
  } as unknown as KubeClient;
  return { client, calls };
}

describe('metrics authorization', () => {
  const silent = pino({ level: 'silent' });

  test('allowed: cached; denied: 403, cached for 30 s; unknown tokens: 401, never cached', async () => {
    let now = 0;
    const { client, calls } = reviewingClient({ good: 'prometheus', other: 'someone' }, new Set(['prometheus']));
    const auth = delegatingAuthorizer(client, silent, () => now);
    assert.deepEqual(await auth.authorize('Bearer good', '/metrics', 'GET'), { allowed: true, user: 'prometheus' });
    assert.deepEqual(await auth.authorize('Bearer good', '/metrics', 'GET'), { allowed: true, user: 'prometheus' });
    assert.deepEqual(calls, { tokenReviews: 1, accessReviews: 1 });
    const denied = await auth.authorize('bearer other', '/metrics', 'GET');
    assert.deepEqual(denied, { allowed: false, code: 403, message: 'Forbidden: user "someone" cannot get path "/metrics"' });
    for (const t of ['Bearer bad', 'Bearer bad']) assert.equal((await auth.authorize(t, '/metrics', 'GET')).allowed, false);
    assert.deepEqual(calls, { tokenReviews: 4, accessReviews: 2 }, 'the unknown token asked twice');
    assert.equal((await auth.authorize(undefined, '/metrics', 'GET') as any).code, 401);
    assert.equal((await auth.authorize('Basic dXNlcg==', '/metrics', 'GET') as any).code, 401);
    assert.equal(calls.tokenReviews, 4, 'no review without a bearer token');
    now += AUTHZ_DENY_TTL_MS + 1;
    await auth.authorize('Bearer other', '/metrics', 'GET');
    assert.deepEqual(calls, { tokenReviews: 4, accessReviews: 3 }, 'the denial asked again after 30 s, the user still cached');
    now += AUTHN_CACHE_TTL_MS;
    await auth.authorize('Bearer good', '/metrics', 'GET');
    assert.deepEqual(calls, { tokenReviews: 5, accessReviews: 3 }, 'the token reviewed again after a minute, the allowance still cached');
  }); // prettier-ignore

  test('the apiserver unreachable: 500 with a message, nothing cached', async () => {
    const { client } = reviewingClient({}, new Set(), true);
    const d = await delegatingAuthorizer(client, silent).authorize('Bearer x', '/metrics', 'GET');
    assert.deepEqual(d, {
      allowed: false,
      code: 500,
      message: 'Internal Server Error: authorization could not be checked',
    });
  });
});
