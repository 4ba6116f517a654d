// e2e: on a real apiserver with our CRD and webhook configurations registered, `kubectl apply` fills every default,
// refuses each invalid manifest with the expected message, refuses a selector change, accepts a partition change;
// `kubectl explain` and the printer columns work; the example manifests of the OpenKruise user manual and of articles
// on Advanced DaemonSet are accepted and defaulted. No pods are needed: every DaemonSet here targets a node group that
// does not exist.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { createNamespace, deleteNamespace, kubectl, KubectlError, uniqueName } from '../lib/kube.ts';
import { ADS } from '../lib/ads.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PERCENT_ERR =
  "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";
const RU = 'spec.updateStrategy.rollingUpdate';

let group: string;

function manifest(name: string, ns: string, edit: (spec: Json) => void = () => {}): Json {
  const spec: Json = {
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { nodeSelector: { 'e2e-group': group }, containers: [{ name: 'c', image: 'busybox:1.36' }] },
    },
  };
  edit(spec);
  return { apiVersion: 'apps.kruise.io/v1alpha1', kind: 'DaemonSet', metadata: { name, namespace: ns }, spec };
}

/** `kubectl apply -f -` (client-side, as users run it); resolves to stderr of a refusal, or undefined. */
async function applyRefusal(obj: Json, extra: string[] = []): Promise<string | undefined> {
  try {
    await kubectl(['apply', '-f', '-', ...extra], JSON.stringify(obj));
    return undefined;
  } catch (err) {
    if (err instanceof KubectlError) return err.stderr;
    throw err;
  }
}

async function getJson(ns: string, name: string): Promise<Json> {
  return JSON.parse(await kubectl(['get', ADS, name, '-n', ns, '-o', 'json'])) as Json;
}

/** Deep merge of YAML fragments (the documented examples show only the part of the spec they are about). */
function merge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? merge(b, v)
        : v;
  }
  return out;
}

describe('admission webhook on the real control plane', { timeout: 180_000 }, () => {
  let ns: string;
  before(async () => {
    ns = await createNamespace('e2e-webhook');
    group = uniqueName('no-such-nodes');
  });
  after(async () => {
    await deleteNamespace(ns);
  });

  test('kubectl apply of a minimal manifest comes back with every default', async () => {
    assert.equal(await applyRefusal(manifest('minimal', ns)), undefined);
    const ds = await getJson(ns, 'minimal');
    assert.equal(ds.spec.burstReplicas, 250);
    assert.equal(ds.spec.revisionHistoryLimit, 10);
    assert.deepEqual(ds.spec.updateStrategy, {
      type: 'RollingUpdate',
      rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' },
    });
    const pod = ds.spec.template.spec;
    assert.deepEqual(
      {
        restartPolicy: pod.restartPolicy,
        dnsPolicy: pod.dnsPolicy,
        schedulerName: pod.schedulerName,
        terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds,
        securityContext: pod.securityContext,
      },
      {
        restartPolicy: 'Always',
        dnsPolicy: 'ClusterFirst',
        schedulerName: 'default-scheduler',
        terminationGracePeriodSeconds: 30,
        securityContext: {},
      },
    );
    assert.deepEqual(pod.containers[0], {
      name: 'c',
      image: 'busybox:1.36',
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
      resources: {},
    });
  });

  test('each invalid manifest is refused by kubectl apply with the expected message', async () => {
    const ru = (s: Json, v: Json) => (s.updateStrategy = { type: 'RollingUpdate', rollingUpdate: v });
    const cases: { name: string; edit: (s: Json) => void; want: string }[] = [
      { name: 'selector-mismatch', edit: (s) => (s.selector.matchLabels = { app: 'other' }), want: 'spec.template.metadata.labels: Invalid value: {"app":"selector-mismatch"}: `selector` does not match template `labels`' },
      { name: 'empty-selector', edit: (s) => (s.selector = { matchExpressions: [] }), want: 'spec.selector: Invalid value: {"matchExpressions":[]}: empty selector is invalid for daemonset' },
      { name: 'bad-strategy-type', edit: (s) => (s.updateStrategy = { type: 'Recreate' }), want: 'spec.updateStrategy.type: Unsupported value: "Recreate": supported values: "RollingUpdate", "OnDelete"' },
      { name: 'bad-ru-type', edit: (s) => ru(s, { rollingUpdateType: 'Fast' }), want: `${RU}.rollingUpdateType: Unsupported value: "Fast": supported values: "Standard", "Surging", "InPlaceIfPossible"` },
      { name: 'both-set', edit: (s) => ru(s, { maxSurge: 1, maxUnavailable: 1 }), want: `${RU}.maxSurge: Invalid value: "1": may not be set when maxUnavailable is non-zero` },
      { name: 'both-zero', edit: (s) => ru(s, { maxSurge: 0, maxUnavailable: 0 }), want: `${RU}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0` },
      { name: 'inplace-surge', edit: (s) => ru(s, { rollingUpdateType: 'InPlaceIfPossible', maxSurge: 1, maxUnavailable: 0 }), want: `${RU}.maxSurge: Invalid value: "1": must be 0 for InPlaceIfPossible type` },
      { name: 'unavailable-150', edit: (s) => ru(s, { maxUnavailable: '150%' }), want: `${RU}.maxUnavailable: Invalid value: "150%": must not be greater than 100%` },
      { name: 'partition-negative', edit: (s) => ru(s, { partition: -1 }), want: `${RU}.partition: Invalid value: "-1": must be greater than or equal to 0` },
      { name: 'restart-onfailure', edit: (s) => (s.template.spec.restartPolicy = 'OnFailure'), want: 'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"' },
      { name: 'deadline', edit: (s) => (s.template.spec.activeDeadlineSeconds = 30), want: 'spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported' },
      { name: 'inplace-hook', edit: (s) => (s.lifecycle = { inPlaceUpdate: { labelsHandler: { a: 'b' } } }), want: 'spec.lifecycle.inPlaceUpdate: Forbidden: inPlaceUpdate hook has not supported yet' },
      { name: 'no-containers', edit: (s) => (s.template.spec.containers = []), want: 'spec.template.spec.containers: Required value' },
      { name: 'dup-containers', edit: (s) => s.template.spec.containers.push({ name: 'c', image: 'nginx:1' }), want: 'spec.template.spec.containers[1].name: Duplicate value: "c"' },
      { name: 'no-image', edit: (s) => delete s.template.spec.containers[0].image, want: 'spec.template.spec.containers[0].image: Required value' },
      { name: 'requests-over-limits', edit: (s) => (s.template.spec.containers[0].resources = { requests: { cpu: '2' }, limits: { cpu: '1' } }), want: 'spec.template.spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1' },
      { name: 'min-ready-negative', edit: (s) => (s.minReadySeconds = -1), want: 'spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0' },
    ]; // prettier-ignore
    // Malformed values, for each IntOrString field (Kruise would silently take garbage as 0; docs/differences.md).
    const fields: { field: string; path: string; set: (s: Json, v: unknown) => void }[] = [
      { field: 'maxsurge', path: `${RU}.maxSurge`, set: (s, v) => ru(s, { maxSurge: v, maxUnavailable: 0 }) },
      { field: 'maxunavailable', path: `${RU}.maxUnavailable`, set: (s, v) => ru(s, { maxUnavailable: v }) },
      { field: 'partition', path: `${RU}.partition`, set: (s, v) => ru(s, { partition: v }) },
      { field: 'burst', path: 'spec.burstReplicas', set: (s, v) => (s.burstReplicas = v) },
    ];
    for (const { field, path, set } of fields)
      for (const [i, [value, detail]] of (
        [
          ['abc', PERCENT_ERR],
          ['-1', PERCENT_ERR],
          ['101%', 'must not be greater than 100%'],
        ] as const
      ).entries())
        cases.push({
          name: `${field}-${i}`,
          edit: (s) => set(s, value),
          want: `${path}: Invalid value: "${value}": ${detail}`,
        });

    const failures: string[] = [];
    // A few kubectl processes at a time: the machine is small.
    for (let i = 0; i < cases.length; i += 6) {
      await Promise.all(
        cases.slice(i, i + 6).map(async (c) => {
          const stderr = await applyRefusal(manifest(c.name, ns, c.edit));
          if (stderr === undefined) failures.push(`${c.name}: accepted`);
          else if (!stderr.includes(c.want)) failures.push(`${c.name}: want ${c.want}\n   got ${stderr.trim()}`);
          // kubectl rebuilds the message from status.details (kind, name, one line per cause).
          else if (!stderr.includes(`The DaemonSet "${c.name}" is invalid: ${c.want}`))
            failures.push(`${c.name}: not in the apiserver's Invalid format: ${stderr.trim()}`);
        }),
      );
    }
    assert.deepEqual(failures, [], failures.join('\n'));
    const stored = (await kubectl(['get', ADS, '-n', ns, '-o', 'name'])).trim().split('\n');
    const leaked = cases.filter((c) => stored.includes(`daemonset.apps.kruise.io/${c.name}`)).map((c) => c.name);
    assert.deepEqual(leaked, [], 'no refused object was stored');
  });

  test('the rejection reaches clients as 422 Invalid with one cause per field error', async () => {
    const obj = manifest('several', ns, (s) => {
      s.minReadySeconds = -1;
      s.revisionHistoryLimit = -1;
    });
    // -v=8 logs the apiserver's response: the webhook's Status, passed through with the webhook's name in front.
    const out = await kubectl(['create', '--dry-run=server', '-f', '-', '-v=8'], JSON.stringify(obj)).catch(
      (e: KubectlError) => e.stderr,
    );
    assert.match(out, /422 Unprocessable Entity/);
    const body = /^\s*(\{"kind":"Status".*\})\s*$/m.exec(out)?.[1];
    assert.ok(body, 'response body logged');
    const status = JSON.parse(body) as Json;
    assert.equal(status.code, 422);
    assert.equal(status.reason, 'Invalid');
    assert.equal(
      status.message,
      'admission webhook "vdaemonset.apps.kruise.io" denied the request: DaemonSet.apps.kruise.io "several" is invalid: [spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0, spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0]',
    );
    assert.deepEqual(
      (status.details.causes as Json[]).map((c) => [c.reason, c.field]),
      [
        ['FieldValueInvalid', 'spec.minReadySeconds'],
        ['FieldValueInvalid', 'spec.revisionHistoryLimit'],
      ],
    );
    const stderr = (await applyRefusal(obj)) ?? '';
    assert.match(stderr, /spec\.minReadySeconds: Invalid value: -1: must be greater than or equal to 0/);
    assert.match(stderr, /spec\.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0/);
  });

  test('update: a selector change is refused, a valid partition change is accepted', async () => {
    const name = 'updates';
    assert.equal(await applyRefusal(manifest(name, ns)), undefined);
    const changedSelector = manifest(name, ns, (s) => {
      s.selector.matchLabels.tier = 'web';
      s.template.metadata.labels.tier = 'web';
    });
    const refused = await applyRefusal(changedSelector);
    assert.ok(refused, 'selector change refused');
    const want =
      "The DaemonSet \"updates\" is invalid: spec: Forbidden: updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle',  'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";
    assert.ok(refused.includes(want), refused);
    const withPartition = manifest(name, ns, (s) => {
      s.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: 2, maxUnavailable: '50%' } };
      s.burstReplicas = '10%';
    });
    assert.equal(await applyRefusal(withPartition), undefined);
    const ds = await getJson(ns, name);
    assert.deepEqual(ds.spec.updateStrategy.rollingUpdate, {
      rollingUpdateType: 'Standard',
      partition: 2,
      maxUnavailable: '50%',
      maxSurge: 0, // defaulted on create; not in the applied manifest, so apply's three-way merge keeps it
      unhealthyNodes: 'Count', // the same
    });
    assert.equal(ds.spec.burstReplicas, '10%');
    assert.deepEqual(ds.spec.selector, { matchLabels: { app: name } });
  });

  test('kubectl explain prints the partition description', async () => {
    // kubectl explain reads everything after the first dot as the field path, so the fully qualified
    // `daemonsets.apps.kruise.io.spec...` resolves to apps/v1 DaemonSet (kubectl's parsing, for any CRD whose
    // plural clashes with a built-in). Our DaemonSet is reached by its short name or with --api-version.
    for (const args of [
      ['explain', 'ads.spec.updateStrategy.rollingUpdate.partition'],
      ['explain', 'daemonsets.spec.updateStrategy.rollingUpdate.partition', '--api-version=apps.kruise.io/v1alpha1'],
    ]) {
      const out = await kubectl(args);
      assert.match(out, /GROUP:\s+apps\.kruise\.io/, args.join(' '));
      assert.match(out, /FIELD:\s+partition/, args.join(' '));
      assert.match(
        out.replace(/\s+/g, ' '),
        /The number of DaemonSet pods \(nodes\) that remain at the old revision during the update/,
        args.join(' '),
      );
    }
  });

  test('printer columns and short names; CONTAINERS, IMAGES, SELECTOR and CANARY at -o wide', async () => {
    const table = (out: string) =>
      out
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/));
    const [header, row] = table(await kubectl(['get', 'ads', 'minimal', '-n', ns]));
    assert.deepEqual(header, ['NAME', 'DESIRED', 'CURRENT', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
    assert.equal(row?.[0], 'minimal');
    const [wideHeader, wideRow] = table(await kubectl(['get', 'daemon', 'minimal', '-n', ns, '-o', 'wide']));
    assert.deepEqual(wideHeader, [
      'NAME',
      'DESIRED',
      'CURRENT',
      'READY',
      'UP-TO-DATE',
      'AVAILABLE',
      'AGE',
      'CONTAINERS',
      'IMAGES',
      'SELECTOR',
      'CANARY',
    ]);
    // No canary: status.canary.phase is absent, and kubectl prints the CANARY cell empty.
    assert.deepEqual(wideRow?.slice(-3), ['c', 'busybox:1.36', '{"matchLabels":{"app":"minimal"}}']);
    assert.equal(wideRow?.length, wideHeader!.length - 1);
  });

  test('the documented example manifests (an article and the OpenKruise user manual) are accepted and defaulted', async () => {
    // Spec fragments as printed in an article on Advanced DaemonSet (`article-*`) and in the OpenKruise user manual
    // (`docs-*`, https://openkruise.io/docs/user-manuals/advanceddaemonset). The article writes `type: Surging`
    // inside rollingUpdate, where Kruise's Go type names the field `rollingUpdateType`; we accept it as an alias
    // (Kruise's CRD refuses it as an unknown field; docs/differences.md), so it is applied as printed.
    const fragments: Record<string, string> = {
      'article-canary':
        'spec:\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      selector:\n        matchLabels:\n          nodeType: canary\n',
      'article-partition':
        'spec:\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      partition: 100\n',
      'article-gray':
        'spec:\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxUnavailable: 5\n      partition: 100\n      selector:\n        matchLabels:\n          nodeType: canary\n',
      'article-surging': 'spec:\n  updateStrategy:\n    rollingUpdate:\n      type: Surging\n      maxSurge: 30%\n',
      'article-paused': 'spec:\n  updateStrategy:\n    rollingUpdate:\n      paused: true\n',
      'docs-standard':
        'spec:\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      rollingUpdateType: Standard\n',
      'docs-partition': 'spec:\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      partition: 10\n',
      'docs-resources':
        'spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: busybox:1.36\n        resources:\n          requests:\n            cpu: "2"\n            memory: "2Gi"\n          limits:\n            cpu: "4"\n            memory: "4Gi"\n',
      'docs-predownload':
        'metadata:\n  annotations:\n    apps.kruise.io/image-predownload-parallelism: "10"\n    daemonset.kruise.io/progressive-create-pod: "true"\n',
      'docs-predelete-label':
        'spec:\n  lifecycle:\n    preDelete:\n      labelsHandler:\n        example.io/block-deleting: "true"\n  template:\n    metadata:\n      labels:\n        example.io/block-deleting: "true"\n',
      'docs-mark-not-ready':
        'spec:\n  lifecycle:\n    preDelete:\n      markPodNotReady: true\n      finalizersHandler:\n      - example.io/unready-blocker\n',
    };
    // The article's complete "Usage Example" (name and image adapted to this test's namespace and node group).
    const usage = parse(
      'apiVersion: apps.kruise.io/v1alpha1\nkind: DaemonSet\nmetadata:\n  name: my-daemon\nspec:\n  selector:\n    matchLabels:\n      app: my-daemon\n  template:\n    metadata:\n      labels:\n        app: my-daemon\n    spec:\n      containers:\n      - name: daemon\n        image: my-image:v2\n  updateStrategy:\n    type: RollingUpdate\n    rollingUpdate:\n      selector:\n        matchLabels:\n          nodeType: canary\n      partition: 80\n      maxUnavailable: 10\n',
    ) as Json; // prettier-ignore
    usage.metadata.namespace = ns;
    usage.spec.template.spec.nodeSelector = { 'e2e-group': group };
    const objects = [
      usage,
      ...Object.entries(fragments).map(([name, y]) => merge(manifest(name, ns), parse(y) as Json)),
    ];
    const failures: string[] = [];
    await Promise.all(
      objects.map(async (o) => {
        const refused = await applyRefusal(o);
        if (refused) failures.push(`${o.metadata.name}: ${refused.trim()}`);
      }),
    );
    assert.deepEqual(failures, [], failures.join('\n'));
    const list = JSON.parse(await kubectl(['get', ADS, '-n', ns, '-o', 'json'])) as { items: Json[] };
    const byName = new Map(list.items.map((i) => [i.metadata.name as string, i]));
    for (const o of objects) {
      const ds = byName.get(o.metadata.name);
      assert.ok(ds, `${o.metadata.name} stored`);
      assert.equal(ds.spec.burstReplicas, 250, `${o.metadata.name}: burstReplicas defaulted`);
      assert.equal(ds.spec.revisionHistoryLimit, 10, `${o.metadata.name}: revisionHistoryLimit defaulted`);
      assert.equal(ds.spec.updateStrategy.type, 'RollingUpdate', `${o.metadata.name}: strategy type defaulted`);
      assert.equal(ds.spec.template.spec.restartPolicy, 'Always', `${o.metadata.name}: template defaulted`);
    }
    assert.deepEqual(byName.get('my-daemon')?.spec.updateStrategy.rollingUpdate, {
      rollingUpdateType: 'Standard',
      selector: { matchLabels: { nodeType: 'canary' } },
      partition: 80,
      maxUnavailable: 10,
      unhealthyNodes: 'Count',
    });
    assert.deepEqual(byName.get('article-surging')?.spec.updateStrategy.rollingUpdate, {
      rollingUpdateType: 'Standard',
      maxSurge: '30%',
      maxUnavailable: 0,
      unhealthyNodes: 'Count',
    });
    assert.deepEqual(byName.get('article-paused')?.spec.updateStrategy.rollingUpdate, {
      rollingUpdateType: 'Standard',
      paused: true,
      maxUnavailable: 1,
      maxSurge: 0,
      unhealthyNodes: 'Count',
    });
  });
});
