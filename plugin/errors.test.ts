// What the user reads for each kind of failure: kubectl's lines, and for a 403 the missing permission.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, TransportError } from '../src/k8s/errors.ts';
import { explainError, missingPermission, parseResourcePath, PluginError } from './errors.ts';

const forbidden = (verb: string, path: string, message: string) =>
  new ApiError(verb, path, 403, { kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403, message });

describe('parseResourcePath', () => {
  const cases: { path: string; want: unknown }[] = [
    {
      path: '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/x',
      want: { group: 'apps.kruise.io', resource: 'daemonsets', namespace: 'ns', name: 'x' },
    },
    {
      path: '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/x/status',
      want: { group: 'apps.kruise.io', resource: 'daemonsets', namespace: 'ns', name: 'x', subresource: 'status' },
    },
    { path: '/api/v1/namespaces/ns/pods', want: { group: '', resource: 'pods', namespace: 'ns' } },
    { path: '/api/v1/nodes?watch=true', want: { group: '', resource: 'nodes' } },
    { path: '/healthz', want: undefined },
  ];
  for (const c of cases) test(c.path, () => assert.deepEqual(parseResourcePath(c.path), c.want));
});

describe('explainError', () => {
  const cases: { name: string; err: unknown; text: string; exitCode?: number }[] = [
    {
      name: "NotFound: kubectl's line",
      err: new ApiError('get', '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/x', 404, {
        kind: 'Status',
        reason: 'NotFound',
        message: 'daemonsets.apps.kruise.io "x" not found',
        details: { name: 'x', group: 'apps.kruise.io', kind: 'daemonsets' },
      }),
      text: 'Error from server (NotFound): daemonsets.apps.kruise.io "x" not found',
    },
    {
      name: "Forbidden with the authorizer's message: who, which verb, which resource, where",
      err: forbidden(
        'patch',
        '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/x',
        'daemonsets.apps.kruise.io "x" is forbidden: User "viewer" cannot patch resource "daemonsets" in API group "apps.kruise.io" in the namespace "ns"',
      ),
      text: [
        'Error from server (Forbidden): daemonsets.apps.kruise.io "x" is forbidden: User "viewer" cannot patch resource "daemonsets" in API group "apps.kruise.io" in the namespace "ns"',
        '  missing permission: user "viewer" may not "patch" daemonsets.apps.kruise.io in namespace "ns".',
        '  Ask a cluster administrator for a Role granting it; check with: kubectl auth can-i patch daemonsets.apps.kruise.io -n ns',
      ].join('\n'),
    },
    {
      name: 'Forbidden cluster-wide (a list across namespaces), core group',
      err: forbidden(
        'list',
        '/api/v1/pods',
        'pods is forbidden: User "u" cannot list resource "pods" in API group "" at the cluster scope',
      ),
      text: [
        'Error from server (Forbidden): pods is forbidden: User "u" cannot list resource "pods" in API group "" at the cluster scope',
        '  missing permission: user "u" may not "list" pods cluster-wide.',
        '  Ask a cluster administrator for a Role granting it; check with: kubectl auth can-i list pods',
      ].join('\n'),
    },
    {
      name: 'Forbidden without the RBAC wording (a webhook or another authorizer): from the request',
      err: forbidden('watch', '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets', 'denied by policy'),
      text: [
        'Error from server (Forbidden): denied by policy',
        '  missing permission: may not "watch" daemonsets.apps.kruise.io in namespace "ns".',
        '  Ask a cluster administrator for a Role granting it; check with: kubectl auth can-i watch daemonsets.apps.kruise.io -n ns',
      ].join('\n'),
    },
    {
      name: "401: kubectl's line",
      err: new ApiError('get', '/api/v1/pods', 401, { message: 'Unauthorized' }),
      text: 'error: You must be logged in to the server (Unauthorized)',
    },
    {
      name: 'no connection',
      err: new TransportError(
        'get',
        '/api',
        Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
      ),
      text: 'Unable to connect to the server: connect ECONNREFUSED 127.0.0.1:1',
    },
    { name: 'a PluginError: its message and code', err: new PluginError('nope', 2), text: 'error: nope', exitCode: 2 },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = explainError(c.err);
      assert.equal(r.text, c.text);
      assert.equal(r.exitCode, c.exitCode ?? 1);
    });

  test('anything else is a bug: said so, exit 70', () => {
    const r = explainError(new TypeError('x is undefined'));
    assert.match(r.text, /^error: unexpected failure \(this is a bug in kubectl-ads/);
    assert.equal(r.exitCode, 70);
  });

  test('missingPermission reads subresources from the request', () => {
    const p = missingPermission(
      forbidden('patch', '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/x/status', ''),
    );
    assert.deepEqual(p, { verb: 'patch', resource: 'daemonsets.apps.kruise.io/status', namespace: 'ns' });
  });
});
