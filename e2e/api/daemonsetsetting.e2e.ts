// advanced-daemonset.io/v1alpha1 DaemonSetSetting on the real control plane (docs/api.md: DaemonSetSetting): the CRD the
// harness installs (e2e/cluster/crd.ts, settingCrdObject()) gives `kubectl explain` our descriptions and `kubectl get`
// its columns; the manager's webhooks (registered by URL, e2e/run.ts) default spec.reference, refuse a bad manifest
// with field paths in the apiserver's words, and refuse a change of spec.reference. Admission only: no DaemonSet or
// node is needed, as the webhook makes no API call (what the reference names is the controller's to check).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createNamespace, deleteNamespace, eventually, kubectl, KubectlError } from '../lib/kube.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function setting(name: string, ns: string, edit: (spec: Json) => void = () => {}): Json {
  const spec: Json = {
    reference: { name: 'agent' },
    nodeSelector: { matchLabels: { 'node.example.com/group': 'large' } },
    containers: [{ name: 'agent', resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } } }],
  };
  edit(spec);
  return {
    apiVersion: 'advanced-daemonset.io/v1alpha1',
    kind: 'DaemonSetSetting',
    metadata: { name, namespace: ns },
    spec,
  };
}

/** `kubectl apply -f -`; resolves to stderr of a refusal, or undefined. */
async function applyRefusal(obj: Json): Promise<string | undefined> {
  try {
    await kubectl(['apply', '-f', '-'], JSON.stringify(obj));
    return undefined;
  } catch (err) {
    if (err instanceof KubectlError) return err.stderr;
    throw err;
  }
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ');

describe('DaemonSetSetting on the real control plane', { timeout: 120_000 }, () => {
  let ns: string;
  before(async () => {
    ns = await createNamespace('e2e-dss');
  });
  after(async () => {
    await deleteNamespace(ns);
  });

  test('kubectl explain prints our descriptions, by short name and by singular', async () => {
    const resources = await kubectl(['explain', 'dss.spec.containers.resources']);
    assert.match(resources, /GROUP:\s+advanced-daemonset\.io/);
    assert.match(resources, /KIND:\s+DaemonSetSetting/);
    assert.match(resources, /VERSION:\s+v1alpha1/);
    assert.match(oneLine(resources), /The resources the container gets on the matched nodes, in place of those of the pod template/);
    assert.match(oneLine(resources), /limits\s+<map\[string\]/);
    const reference = await kubectl(['explain', 'daemonsetsetting.spec.reference']);
    assert.match(oneLine(reference), /The DaemonSet whose pods get these resources \(autoscaling\/v1 CrossVersionObjectReference/);
    assert.match(oneLine(reference), /name\s+<string> -required-/);
    assert.match(oneLine(reference), /API version of the referent: apps\.kruise\.io\/v1alpha1 or apps\.kruise\.io\/v1beta1 \(the default\)/);
  }); // prettier-ignore

  test('kubectl apply: spec.reference kind and apiVersion are defaulted; kubectl get dss prints the columns', async () => {
    assert.equal(await applyRefusal(setting('large-nodes', ns)), undefined);
    const stored = JSON.parse(await kubectl(['get', 'dss', 'large-nodes', '-n', ns, '-o', 'json'])) as Json;
    assert.deepEqual(stored.spec.reference, { name: 'agent', kind: 'DaemonSet', apiVersion: 'apps.kruise.io/v1beta1' });
    const table = (out: string) =>
      out
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/));
    const [header] = table(await kubectl(['get', 'dss', 'large-nodes', '-n', ns]));
    assert.deepEqual(header, ['NAME', 'REFERENCE', 'NODES', 'VALID', 'AGE']);
    // No DaemonSet agent in the namespace: the controller says so in the status, which the columns print.
    const row = await eventually('the controller writes the status of a setting without its DaemonSet', async () => {
      const [, r] = table(await kubectl(['get', 'dss', 'large-nodes', '-n', ns]));
      return r?.length === header!.length && r;
    });
    assert.deepEqual(row.slice(0, 4), ['large-nodes', 'agent', '0', 'False']);
    const status = (JSON.parse(await kubectl(['get', 'dss', 'large-nodes', '-n', ns, '-o', 'json'])) as Json).status;
    assert.equal(status.conditions.find((c: { type: string }) => c.type === 'Valid').reason, 'DaemonSetNotFound');
    const [wide] = table(await kubectl(['get', 'daemonsetsettings', '-n', ns, '-o', 'wide']));
    assert.deepEqual(wide, ['NAME', 'REFERENCE', 'NODES', 'VALID', 'AGE', 'CONFLICTING']);
  });

  test('invalid manifests are refused by kubectl apply with field paths, and not stored', async () => {
    const cases: { name: string; edit: (s: Json) => void; want: string }[] = [
      { name: 'requests-over-limits', edit: (s) => (s.containers[0].resources = { requests: { cpu: '2' }, limits: { cpu: '1' } }), want: 'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1' },
      { name: 'not-a-daemonset', edit: (s) => (s.reference.kind = 'Deployment'), want: 'spec.reference.kind: Unsupported value: "Deployment": supported values: "DaemonSet"' },
      { name: 'no-containers', edit: (s) => (s.containers = []), want: 'spec.containers: Required value' },
      { name: 'bad-resource-name', edit: (s) => (s.containers[0].resources = { limits: { gpu: '1' } }), want: 'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified' },
    ]; // prettier-ignore
    const failures: string[] = [];
    await Promise.all(
      cases.map(async (c) => {
        const stderr = await applyRefusal(setting(c.name, ns, c.edit));
        if (stderr === undefined) failures.push(`${c.name}: accepted`);
        // kubectl rebuilds the message from status.details (kind, name, one line per cause).
        else if (!stderr.includes(`The DaemonSetSetting "${c.name}" is invalid: `) || !stderr.includes(c.want))
          failures.push(`${c.name}: want ${c.want}\n   got ${stderr.trim()}`);
      }),
    );
    assert.deepEqual(failures, [], failures.join('\n'));
    const stored = (await kubectl(['get', 'dss', '-n', ns, '-o', 'name'])).trim().split('\n');
    assert.deepEqual(
      cases.filter((c) => stored.includes(`daemonsetsetting.advanced-daemonset.io/${c.name}`)).map((c) => c.name),
      [],
      'no refused object was stored',
    );
  });

  test('the webhook answers with the 422 Invalid status and its causes', async () => {
    const obj = setting('several', ns, (s) => {
      s.reference.apiVersion = 'apps/v1';
      s.containers[0].resources = { requests: { cpu: '2' }, limits: { cpu: '1' } };
    });
    // -v=8 logs the apiserver's response: the webhook's Status, passed through with the webhook's name in front.
    const out = await kubectl(['create', '--dry-run=server', '-f', '-', '-v=8'], JSON.stringify(obj)).catch(
      (e: KubectlError) => e.stderr,
    );
    const body = /^\s*(\{"kind":"Status".*\})\s*$/m.exec(out)?.[1];
    assert.ok(body, `response body logged: ${out.slice(-2000)}`);
    const status = JSON.parse(body) as Json;
    assert.equal(status.code, 422);
    assert.equal(status.reason, 'Invalid');
    assert.equal(
      status.message,
      'admission webhook "vdaemonsetsetting.advanced-daemonset.io" denied the request: DaemonSetSetting.advanced-daemonset.io "several" is invalid: [spec.reference.apiVersion: Unsupported value: "apps/v1": supported values: "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1", spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1]',
    );
    assert.deepEqual(
      (status.details.causes as Json[]).map((c) => [c.reason, c.field]),
      [
        ['FieldValueNotSupported', 'spec.reference.apiVersion'],
        ['FieldValueInvalid', 'spec.containers[0].resources.requests'],
      ],
    );
  });

  test('update: spec.reference is immutable; resources and the node selector may change', async () => {
    const name = 'immutable';
    assert.equal(await applyRefusal(setting(name, ns)), undefined);
    const moved = await applyRefusal(setting(name, ns, (s) => (s.reference.name = 'other-agent')));
    assert.ok(moved, 'a change of spec.reference is refused');
    assert.ok(
      moved.includes(
        'The DaemonSetSetting "immutable" is invalid: spec.reference: Invalid value: {"apiVersion":"apps.kruise.io/v1beta1","kind":"DaemonSet","name":"other-agent"}: field is immutable',
      ),
      moved,
    );
    const resized = setting(name, ns, (s) => {
      s.nodeSelector = {
        matchExpressions: [{ key: 'node.example.com/group', operator: 'In', values: ['large', 'xl'] }],
      };
      s.containers[0].resources = { requests: { cpu: '1' }, limits: { cpu: '2', memory: '4Gi' } };
    });
    assert.equal(await applyRefusal(resized), undefined);
    const stored = JSON.parse(await kubectl(['get', 'dss', name, '-n', ns, '-o', 'json'])) as Json;
    assert.deepEqual(stored.spec.containers[0].resources.limits, { cpu: '2', memory: '4Gi' });
    assert.equal(stored.spec.reference.name, 'agent');
  });
});
