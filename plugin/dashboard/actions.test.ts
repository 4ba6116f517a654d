// Table tests of the dashboard's actions: which requests are bad (400) before anything is sent, how an outcome maps to
// an HTTP answer (a Forbidden is the apiserver's 403 and message, a refusal by kubectl ads's rules a 409 with its
// message, never a stack trace), and that KubeActions runs kubectl ads's own commands: same patches, same no-ops,
// same refusals, on the DaemonSet's namespace.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { DaemonSet } from '../../src/api/types.ts';
import { ApiError, TransportError } from '../../src/k8s/errors.ts';
import { type KubeClient } from '../../src/k8s/client.ts';
import { type ResourceType } from '../../src/k8s/resources.ts';
import type { ControllerRevision } from '../../src/k8s/types.ts';
import { UsageError } from '../args.ts';
import { canaryChange } from '../daemonset.ts';
import { PluginError } from '../errors.ts';
import type { ClusterConnection } from '../connect.ts';
import { ds, revisionOf, type DsOptions } from '../test-fixtures.ts';
import { actionErrorResponse, KubeActions, parseActionRequest, type ActionRequest } from './actions.ts';

describe('parseActionRequest', () => {
  const cases: { action: string; body?: unknown; want: string }[] = [
    { action: 'pause', want: 'kubectl ads pause agent -n ns' },
    { action: 'resume', body: {}, want: 'kubectl ads resume agent -n ns' },
    { action: 'partition', body: { value: '3' }, want: 'kubectl ads partition agent 3 -n ns' },
    { action: 'partition', body: { value: 3 }, want: 'kubectl ads partition agent 3 -n ns' },
    { action: 'partition', body: { value: '50%' }, want: 'kubectl ads partition agent 50% -n ns' },
    {
      action: 'partition',
      body: { value: 'abc' },
      want: '400: invalid partition "abc": want a non-negative integer (nodes) or a percentage 0%-100%',
    },
    {
      action: 'partition',
      body: { value: '101%' },
      want: '400: invalid partition "101%": want a non-negative integer (nodes) or a percentage 0%-100%',
    },
    {
      action: 'partition',
      body: { value: '-1' },
      want: '400: invalid partition "-1": want a non-negative integer (nodes) or a percentage 0%-100%',
    },
    { action: 'partition', body: {}, want: '400: partition needs a value: N or N%' },
    { action: 'partition-step', body: { step: 2 }, want: 'kubectl ads partition agent --step 2 -n ns' },
    { action: 'partition-step', body: { step: '5' }, want: 'kubectl ads partition agent --step 5 -n ns' },
    { action: 'partition-step', body: { step: 0 }, want: '400: invalid step 0: want a positive integer (nodes)' },
    { action: 'partition-step', body: { step: 'x' }, want: '400: invalid step "x": want a positive integer (nodes)' },
    { action: 'partition-step', body: { step: 1.5 }, want: '400: invalid step 1.5: want a positive integer (nodes)' },
    { action: 'partition-step', want: '400: invalid step null: want a positive integer (nodes)' },
    { action: 'canary-promote', want: 'kubectl ads canary promote agent -n ns' },
    { action: 'canary-pause', want: 'kubectl ads canary pause agent -n ns' },
    { action: 'canary-resume', want: 'kubectl ads canary resume agent -n ns' },
    { action: 'canary-fail', want: 'kubectl ads canary fail agent -n ns' },
    { action: 'undo', want: 'kubectl ads undo agent -n ns' },
    { action: 'undo', body: { toRevision: 2 }, want: 'kubectl ads undo agent --to-revision 2 -n ns' },
    { action: 'undo', body: { toRevision: 'x' }, want: '400: invalid revision "x": want a non-negative integer' },
    {
      action: 'delete',
      want: '400: unknown action "delete": want one of pause, resume, partition, partition-step, canary-promote, canary-pause, canary-resume, canary-fail, undo',
    },
    { action: 'pause', body: [1], want: '400: the request body must be a JSON object' },
    { action: 'pause', body: 'x', want: '400: the request body must be a JSON object' },
    { action: 'pause', body: { value: 1 }, want: '400: pause takes no field "value"' },
  ];
  for (const c of cases)
    test(`${c.action} ${JSON.stringify(c.body ?? null)}`, () => {
      const r = parseActionRequest(c.action, 'ns', 'agent', c.body);
      assert.equal(r.ok ? r.value.command : `400: ${r.message}`, c.want);
    });

  test('the CLI arguments: positionals and flags as kubectl ads parses them', () => {
    const r = parseActionRequest('partition-step', 'ns', 'agent', { step: 2 });
    assert.ok(r.ok);
    assert.deepEqual(r.value.args, { positionals: ['partition', 'agent'], flags: { step: '2' } });
    const c = parseActionRequest('canary-fail', 'ns', 'agent', {});
    assert.ok(c.ok);
    assert.deepEqual(c.value.args, { positionals: ['canary', 'fail', 'agent'], flags: {} });
  });
});

const forbidden = () =>
  new ApiError('patch', '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/agent', 403, {
    kind: 'Status',
    status: 'Failure',
    reason: 'Forbidden',
    code: 403,
    message:
      'daemonsets.apps.kruise.io "agent" is forbidden: User "viewer" cannot patch resource "daemonsets" in API group "apps.kruise.io" in the namespace "ns"',
  });

describe('actionErrorResponse', () => {
  const cases: { name: string; err: unknown; status: number; message: string | RegExp }[] = [
    {
      name: "a Forbidden: the apiserver's 403 and words, with the missing permission",
      err: forbidden(),
      status: 403,
      message:
        /^Error from server \(Forbidden\): daemonsets.apps.kruise.io "agent" is forbidden: User "viewer" cannot patch resource "daemonsets" in API group "apps.kruise.io" in the namespace "ns"\n {2}missing permission: user "viewer" may not "patch" daemonsets.apps.kruise.io in namespace "ns"\./,
    },
    {
      name: 'NotFound',
      err: new ApiError('get', '/apis/apps.kruise.io/v1alpha1/namespaces/ns/daemonsets/x', 404, {
        reason: 'NotFound',
        message: 'daemonsets.apps.kruise.io "x" not found',
      }),
      status: 404,
      message: 'Error from server (NotFound): daemonsets.apps.kruise.io "x" not found',
    },
    {
      name: 'Invalid (the webhook refused the change)',
      err: new ApiError('patch', '/p', 422, { reason: 'Invalid', message: 'spec.x: Invalid value' }),
      status: 422,
      message: 'Error from server (Invalid): spec.x: Invalid value',
    },
    {
      name: 'an apiserver failure is a bad gateway for the dashboard',
      err: new ApiError('patch', '/p', 500, { reason: 'InternalError', message: 'etcd' }),
      status: 502,
      message: 'Error from server (InternalError): etcd',
    },
    {
      name: "a refusal by kubectl ads's rules: 409 with its message",
      err: new PluginError('the canary of revision h2 failed: it cannot be promoted'),
      status: 409,
      message: 'error: the canary of revision h2 failed: it cannot be promoted',
    },
    { name: 'a usage error', err: new UsageError('NAME is required'), status: 400, message: 'error: NAME is required' },
    {
      name: 'no connection',
      err: new TransportError(
        'patch',
        '/p',
        Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      ),
      status: 502,
      message: 'Unable to connect to the server: connect ECONNREFUSED',
    },
    {
      name: 'a bug: 500 without the stack',
      err: new TypeError('x is undefined'),
      status: 500,
      message: 'error: unexpected failure in kubectl ads dashboard (see its terminal output)',
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = actionErrorResponse(c.err);
      assert.equal(r.status, c.status);
      if (typeof c.message === 'string') assert.equal(r.message, c.message);
      else assert.match(r.message, c.message);
      assert.doesNotMatch(r.message, /\n\s+at /, 'no stack trace');
    });
});

/** Enough of KubeClient for the commands: get, patch and list of one DaemonSet and its revisions. */
class StubClient {
  readonly patches: { namespace?: string; name?: string; patch: unknown; type?: string }[] = [];
  failPatch?: Error;
  constructor(
    public ds: DaemonSet,
    public revisions: ControllerRevision[] = [],
  ) {}
  async get(_type: ResourceType, target: { namespace?: string; name?: string }): Promise<DaemonSet> {
    if (target.namespace !== this.ds.metadata.namespace || target.name !== this.ds.metadata.name)
      throw new ApiError('get', `/x/${target.name}`, 404, { reason: 'NotFound', message: 'not found', details: {} });
    return structuredClone(this.ds);
  }
  async patch(
    _type: ResourceType,
    target: { namespace?: string; name?: string },
    patch: unknown,
    opts: { type?: string },
  ): Promise<DaemonSet> {
    if (this.failPatch) throw this.failPatch;
    this.patches.push({ ...target, patch, type: opts.type });
    return this.ds;
  }
  async listAll(): Promise<{ items: ControllerRevision[]; metadata: Record<string, never> }> {
    return { items: this.revisions, metadata: {} };
  }
}

function actions(o: DsOptions, revisions?: (d: DaemonSet) => ControllerRevision[]) {
  const d = ds({ status: { desiredNumberScheduled: 10 }, ...o });
  const client = new StubClient(d, revisions?.(d));
  const conn = { client: client as unknown as KubeClient, namespace: 'default', server: 'https://x' };
  return { d, client, run: new KubeActions(conn as ClusterConnection) };
}

const request = (action: string, body?: unknown): ActionRequest => {
  const r = parseActionRequest(action, 'ns', 'agent', body);
  assert.ok(r.ok);
  return r.value;
};

describe("KubeActions: kubectl ads's commands", () => {
  test('pause: the merge patch of `kubectl ads pause`, in the DaemonSet namespace (not the kubeconfig one)', async () => {
    const { client, run } = actions({});
    assert.deepEqual(await run.run(request('pause')), {
      message: 'daemonset.apps.kruise.io/agent paused',
      warnings: [],
    });
    assert.deepEqual(client.patches, [
      {
        namespace: 'ns',
        name: 'agent',
        patch: { spec: { updateStrategy: { rollingUpdate: { paused: true } } } },
        type: 'merge',
      },
    ]);
  });

  test('pause when paused: a no-op, nothing written (as the CLI)', async () => {
    const { client, run } = actions({ rollingUpdate: { paused: true } });
    assert.equal((await run.run(request('pause'))).message, 'daemonset.apps.kruise.io/agent already paused');
    assert.deepEqual(client.patches, []);
  });

  test('partition step: from the partition in effect, with the CLI message', async () => {
    const { client, run } = actions({ rollingUpdate: { partition: 5 } });
    assert.equal(
      (await run.run(request('partition-step', { step: 2 }))).message,
      'daemonset.apps.kruise.io/agent partition set to 3 (was 5)',
    );
    assert.deepEqual(client.patches[0]!.patch, { spec: { updateStrategy: { rollingUpdate: { partition: 3 } } } });
  });

  test('partition above desired: written, with the CLI warning', async () => {
    const { run } = actions({});
    const out = await run.run(request('partition', { value: '12' }));
    assert.equal(out.message, 'daemonset.apps.kruise.io/agent partition set to 12 (was 0)');
    assert.deepEqual(out.warnings, [
      'warning: partition 12 is above the 10 nodes that should run this DaemonSet: every node stays on its revision',
    ]);
  });

  test('promote on a Failed canary: refused with the message `kubectl ads canary promote` gives (409)', async () => {
    const o: DsOptions = {
      rollingUpdate: { canary: { nodes: 1 } },
      status: {
        desiredNumberScheduled: 10,
        canary: { revision: 'h2', stableRevision: 'h1', nodes: ['n1'], phase: 'Failed', message: 'crashed' },
      },
    };
    const { client, run, d } = actions(o);
    const err = await run.run(request('canary-promote')).then(
      () => assert.fail('promote must be refused'),
      (e: unknown) => e,
    );
    let cli = '';
    try {
      canaryChange(d, 'promote');
    } catch (e) {
      cli = (e as Error).message;
    }
    assert.match(cli, /failed \(crashed\): it cannot be promoted/);
    assert.deepEqual(actionErrorResponse(err), { status: 409, message: `error: ${cli}` });
    assert.deepEqual(client.patches, []);
  });

  test('canary fail: the annotation naming the revision', async () => {
    const { client, run } = actions({
      rollingUpdate: { canary: { nodes: 1 } },
      status: { canary: { revision: 'h2', stableRevision: 'h1', nodes: ['n1'], phase: 'Observing' } },
    });
    await run.run(request('canary-fail'));
    assert.deepEqual(client.patches[0]!.patch, {
      metadata: { annotations: { 'advanced-daemonset.io/canary-failed': 'h2' } },
    });
  });

  test('undo: the conditional JSON patch of `kubectl ads undo` to the previous revision', async () => {
    const { client, run } = actions({ generation: 3, image: 'busybox:1.37' }, (d) => [
      revisionOf(ds({ image: 'busybox:1.36' }), 1, 'h1'),
      revisionOf(d, 2, 'h2'),
    ]);
    assert.equal((await run.run(request('undo'))).message, 'daemonset.apps.kruise.io/agent rolled back');
    const patch = client.patches[0]!;
    assert.equal(patch.type, 'json');
    assert.deepEqual((patch.patch as unknown[])[0], { op: 'test', path: '/metadata/generation', value: 3 });
  });

  test("a Forbidden patch: the apiserver's 403 reaches the page as such", async () => {
    const { client, run } = actions({});
    client.failPatch = forbidden();
    const err = await run.run(request('resume', {})).then(
      () => undefined,
      (e: unknown) => e,
    );
    // resume on a running rollout is a no-op: nothing sent, no error.
    assert.equal(err, undefined);
    const paused = actions({ rollingUpdate: { paused: true } });
    paused.client.failPatch = forbidden();
    const e2 = await paused.run.run(request('resume', {})).then(
      () => assert.fail('the patch is forbidden'),
      (e: unknown) => e,
    );
    const r = actionErrorResponse(e2);
    assert.equal(r.status, 403);
    assert.match(r.message, /^Error from server \(Forbidden\): .*cannot patch resource "daemonsets"/);
  });
});
