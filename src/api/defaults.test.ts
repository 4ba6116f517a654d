// Table tests of the mutating webhook's defaults: Kruise's SetDefaultsDaemonSet
// (https://github.com/openkruise/kruise/blob/master/apis/apps/defaults/v1alpha1.go) and SetDefaultsDaemonSetV1beta1
// (https://github.com/openkruise/kruise/blob/v1.9.0/apis/apps/defaults/v1beta1.go), every row in both versions,
// the apps/v1 pod-template defaults, and the JSON patch (computed against the raw object, empty when nothing
// changes).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fastJsonPatch from 'fast-json-patch';
import {
  defaultDaemonSet,
  defaultingPatch,
  setDefaultsDaemonSet,
  setDefaultsPodTemplate,
  templatePatchLowerBound,
  type JsonObject,
} from './defaults.ts';
import { SERVED_VERSIONS, type ServedVersion } from './constants.ts';
import { daemonSetManifest, daemonSetManifestV1beta1 } from './testing/review-fixtures.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

describe('setDefaultsDaemonSet: Kruise defaults exactly, per version', () => {
  /**
   * The spec Kruise's defaults give around `updateStrategy`: burstReplicas 250, revisionHistoryLimit 10; and ours,
   * progressDeadlineSeconds 600 (as a Deployment's).
   */
  const defaulted = (updateStrategy: JsonObject): JsonObject => ({
    burstReplicas: 250,
    updateStrategy,
    revisionHistoryLimit: 10,
    progressDeadlineSeconds: 600,
  });
  /** A canary as defaulted, with `fields` on top. */
  const canary = (fields: JsonObject = {}): JsonObject => ({
    nodes: 1,
    validation: 'Auto',
    duration: '10m',
    noRestartsDuration: '5m',
    autoPause: { enabled: true, maxRestarts: 2 },
    autoFail: { enabled: true, maxRestarts: 5 },
    ...fields,
  });
  const rolling = (ru: JsonObject): JsonObject =>
    defaulted({
      type: 'RollingUpdate',
      rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count', ...ru },
    });
  /** `want` in both versions, unless `v1beta1` says what v1beta1 (no Surging, no `type` alias) gives instead. */
  const cases: { name: string; spec: JsonObject; want: JsonObject; v1beta1?: JsonObject }[] = [
    {
      name: 'empty spec: every default',
      spec: {},
      want: defaulted({
          type: 'RollingUpdate',
          rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' },
        }),
    },
    {
      name: 'set values are kept',
      spec: {
        burstReplicas: '10%',
        revisionHistoryLimit: 0,
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 3 } },
      },
      want: {
        burstReplicas: '10%',
        revisionHistoryLimit: 0,
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 3, unhealthyNodes: 'Count' } },
        progressDeadlineSeconds: 600,
      },
    },
    {
      name: 'burstReplicas 0 is kept (a pointer in Go)',
      spec: { burstReplicas: 0, revisionHistoryLimit: 1, updateStrategy: { type: 'OnDelete' } },
      want: { burstReplicas: 0, revisionHistoryLimit: 1, updateStrategy: { type: 'OnDelete' }, progressDeadlineSeconds: 600 },
    },
    {
      name: 'progressDeadlineSeconds set is kept',
      spec: { progressDeadlineSeconds: 30, updateStrategy: { type: 'OnDelete' } },
      want: { ...defaulted({ type: 'OnDelete' }), progressDeadlineSeconds: 30 },
    },
    {
      name: 'progressDeadlineSeconds is not defaulted where minReadySeconds reaches 600 (it must be above it)',
      spec: { minReadySeconds: 600, updateStrategy: { type: 'OnDelete' } },
      want: { minReadySeconds: 600, burstReplicas: 250, updateStrategy: { type: 'OnDelete' }, revisionHistoryLimit: 10 },
    },
    {
      name: 'waves: availableSeconds 0; priorityStrategy kept as sent',
      spec: {
        updateStrategy: {
          rollingUpdate: {
            waves: { topologyKey: 'topology.kubernetes.io/zone' },
            priorityStrategy: { orderPriority: [{ orderedKey: 'rack' }] },
          },
        },
      },
      want: rolling({
        waves: { topologyKey: 'topology.kubernetes.io/zone', availableSeconds: 0 },
        priorityStrategy: { orderPriority: [{ orderedKey: 'rack' }] },
      }),
    },
    {
      name: 'waves: a set availableSeconds is kept',
      spec: { updateStrategy: { rollingUpdate: { waves: { topologyKey: 'zone', availableSeconds: 60 } } } },
      want: rolling({ waves: { topologyKey: 'zone', availableSeconds: 60 } }),
    },
    {
      name: 'canary {}: every default (EDS)',
      spec: { updateStrategy: { rollingUpdate: { canary: {} } } },
      want: rolling({ canary: canary() }),
    },
    {
      name: 'canary Manual: no duration nor noRestartsDuration',
      spec: { updateStrategy: { rollingUpdate: { canary: { validation: 'Manual', nodes: '10%' } } } },
      want: rolling({
        canary: { nodes: '10%', validation: 'Manual', autoPause: { enabled: true, maxRestarts: 2 }, autoFail: { enabled: true, maxRestarts: 5 } },
      }),
    },
    {
      name: 'canary: set values are kept',
      spec: {
        updateStrategy: {
          rollingUpdate: {
            canary: {
              nodes: 3,
              duration: '1m',
              noRestartsDuration: '30s',
              spreadByNodeLabels: ['zone'],
              autoPause: { enabled: false, maxRestarts: 0, maxStartupDuration: '5m' },
              autoFail: { maxRestarts: 9, timeout: '1h' },
            },
          },
        },
      },
      want: rolling({
        canary: canary({
          nodes: 3,
          duration: '1m',
          noRestartsDuration: '30s',
          spreadByNodeLabels: ['zone'],
          autoPause: { enabled: false, maxRestarts: 0, maxStartupDuration: '5m' },
          autoFail: { maxRestarts: 9, timeout: '1h', enabled: true },
        }),
      }),
    },
    {
      name: 'empty type becomes RollingUpdate with rollingUpdate {} filled',
      spec: { updateStrategy: { type: '' } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' } }),
    },
    {
      name: 'OnDelete leaves rollingUpdate absent',
      spec: { updateStrategy: { type: 'OnDelete' } },
      want: defaulted({ type: 'OnDelete' }),
    },
    {
      name: 'OnDelete leaves a given rollingUpdate untouched',
      spec: { updateStrategy: { type: 'OnDelete', rollingUpdate: { partition: 1 } } },
      want: defaulted({ type: 'OnDelete', rollingUpdate: { partition: 1 } }),
    },
    {
      name: 'Surging: maxSurge 1 and maxUnavailable 0, then type Standard (v1beta1: left for validation to refuse)',
      spec: { updateStrategy: { rollingUpdate: { rollingUpdateType: 'Surging' } } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxSurge: 1, maxUnavailable: 0, unhealthyNodes: 'Count' } }),
      v1beta1: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Surging', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' } }),
    },
    {
      name: '`rollingUpdate.type: Surging`, as articles write it, is the alias of rollingUpdateType (moved, then defaulted; v1beta1 has no alias)',
      spec: { updateStrategy: { rollingUpdate: { type: 'Surging', maxSurge: '30%' } } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxSurge: '30%', maxUnavailable: 0, unhealthyNodes: 'Count' } }),
      v1beta1: defaulted({ type: 'RollingUpdate', rollingUpdate: { type: 'Surging', rollingUpdateType: 'Standard', maxSurge: '30%', unhealthyNodes: 'Count' } }),
    },
    {
      name: 'alias equal to rollingUpdateType is dropped; a different one stays for validation to refuse (v1beta1: not touched)',
      spec: { updateStrategy: { rollingUpdate: { type: 'InPlaceIfPossible', rollingUpdateType: 'Standard' } } },
      want: defaulted({
          type: 'RollingUpdate',
          rollingUpdate: { type: 'InPlaceIfPossible', rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' },
        }),
    },
    {
      name: 'alias equal to rollingUpdateType is dropped (v1beta1: not touched)',
      spec: { updateStrategy: { rollingUpdate: { type: 'InPlaceIfPossible', rollingUpdateType: 'InPlaceIfPossible' } } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' } }),
      v1beta1: defaulted({
          type: 'RollingUpdate',
          rollingUpdate: { type: 'InPlaceIfPossible', rollingUpdateType: 'InPlaceIfPossible', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' },
        }),
    },
    {
      name: 'Surging keeps a set maxSurge',
      spec: { updateStrategy: { rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: '20%' } } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxSurge: '20%', maxUnavailable: 0, unhealthyNodes: 'Count' } }),
      v1beta1: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: '20%', unhealthyNodes: 'Count' } }),
    },
    {
      name: 'only maxSurge set: maxUnavailable stays unset',
      spec: { updateStrategy: { rollingUpdate: { maxSurge: 2 } } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxSurge: 2, unhealthyNodes: 'Count' } }),
    },
    {
      name: 'only maxUnavailable set: maxSurge stays unset',
      spec: { updateStrategy: { rollingUpdate: { maxUnavailable: '50%' } } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: '50%', unhealthyNodes: 'Count' } }),
    },
    {
      name: 'null values count as unset',
      spec: { burstReplicas: null, revisionHistoryLimit: null, updateStrategy: { rollingUpdate: { maxSurge: null, maxUnavailable: null } } },
      want: defaulted({ type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxSurge: 0, maxUnavailable: 1, unhealthyNodes: 'Count' } }),
    },
    {
      name: 'partition, paused and rollingUpdate.selector are not defaulted',
      spec: { updateStrategy: { rollingUpdate: { partition: 2, paused: true, selector: { matchLabels: { canary: 'true' } } } } },
      want: defaulted({
          type: 'RollingUpdate',
          rollingUpdate: { partition: 2, paused: true, selector: { matchLabels: { canary: 'true' } }, rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' },
        }),
    },
    {
      name: 'unhealthyNodes set is kept (Ignore)',
      spec: { updateStrategy: { rollingUpdate: { unhealthyNodes: 'Ignore' } } },
      want: rolling({ unhealthyNodes: 'Ignore' }),
    },
    {
      name: 'unhealthyNodes empty becomes Count (the upstream rule)',
      spec: { updateStrategy: { rollingUpdate: { unhealthyNodes: '' } } },
      want: rolling({}),
    },
    {
      name: 'scaleStrategy is not defaulted, and kept as written',
      spec: { scaleStrategy: { partitionedScaling: true }, updateStrategy: { type: 'OnDelete' } },
      want: { scaleStrategy: { partitionedScaling: true }, ...defaulted({ type: 'OnDelete' }) },
    },
    {
      name: 'an empty or false scaleStrategy is kept as written (the patch only adds)',
      spec: { scaleStrategy: { partitionedScaling: false }, updateStrategy: { type: 'OnDelete' } },
      want: { scaleStrategy: { partitionedScaling: false }, ...defaulted({ type: 'OnDelete' }) },
    },
  ]; // prettier-ignore
  for (const version of SERVED_VERSIONS)
    for (const c of cases)
      test(`${version}: ${c.name}`, () => {
        const ds: JsonObject = { spec: structuredClone(c.spec) };
        setDefaultsDaemonSet(ds, version);
        assert.deepEqual(ds.spec, version === 'v1beta1' ? (c.v1beta1 ?? c.want) : c.want);
      });
  test('the version defaults to v1alpha1 (the internal model)', () => {
    const ds: JsonObject = { spec: { updateStrategy: { rollingUpdate: { rollingUpdateType: 'Surging' } } } };
    setDefaultsDaemonSet(ds);
    assert.equal((ds as any).spec.updateStrategy.rollingUpdate.rollingUpdateType, 'Standard');
  });
});

describe('setDefaultsPodTemplate: as the apiserver defaults an apps/v1 DaemonSet template', () => {
  const POD_DEFAULTS = {
    dnsPolicy: 'ClusterFirst',
    restartPolicy: 'Always',
    securityContext: {},
    terminationGracePeriodSeconds: 30,
    schedulerName: 'default-scheduler',
  };
  const CONTAINER_DEFAULTS = {
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    resources: {},
  };
  /** Container `c` (image nginx:1) as defaulted, with `fields` on top. */
  const defaultedC = (fields: JsonObject = {}) => ({
    name: 'c',
    image: 'nginx:1',
    imagePullPolicy: 'IfNotPresent',
    ...CONTAINER_DEFAULTS,
    ...fields,
  });
  const cases: { name: string; spec: JsonObject; want: JsonObject }[] = [
    {
      name: 'pod and container defaults; imagePullPolicy Always without a tag',
      spec: { containers: [{ name: 'c', image: 'nginx' }] },
      want: { ...POD_DEFAULTS, containers: [{ name: 'c', image: 'nginx', imagePullPolicy: 'Always', ...CONTAINER_DEFAULTS }] },
    },
    {
      name: 'imagePullPolicy from the tag: latest → Always, a tag → IfNotPresent, a digest → IfNotPresent',
      spec: {
        containers: [
          { name: 'a', image: 'nginx:latest' },
          { name: 'b', image: 'registry.local:5000/team/app:1.2' },
          { name: 'c', image: `busybox@sha256:${'a'.repeat(64)}` },
          { name: 'd', image: 'nginx:1.27', imagePullPolicy: 'Never' },
        ],
      },
      want: {
        ...POD_DEFAULTS,
        containers: [
          { name: 'a', image: 'nginx:latest', imagePullPolicy: 'Always', ...CONTAINER_DEFAULTS },
          { name: 'b', image: 'registry.local:5000/team/app:1.2', imagePullPolicy: 'IfNotPresent', ...CONTAINER_DEFAULTS },
          { name: 'c', image: `busybox@sha256:${'a'.repeat(64)}`, imagePullPolicy: 'IfNotPresent', ...CONTAINER_DEFAULTS },
          { name: 'd', image: 'nginx:1.27', imagePullPolicy: 'Never', ...CONTAINER_DEFAULTS },
        ],
      },
    },
    {
      name: 'set pod fields are kept',
      spec: {
        dnsPolicy: 'ClusterFirstWithHostNet',
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 0,
        schedulerName: 'custom',
        securityContext: { runAsUser: 1000 },
        containers: [{ name: 'c', image: 'nginx:1', terminationMessagePolicy: 'FallbackToLogsOnError', resources: { limits: { cpu: '1' } } }],
      },
      want: {
        dnsPolicy: 'ClusterFirstWithHostNet',
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 0,
        schedulerName: 'custom',
        securityContext: { runAsUser: 1000 },
        containers: [
          {
            name: 'c',
            image: 'nginx:1',
            imagePullPolicy: 'IfNotPresent',
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'FallbackToLogsOnError',
            resources: { limits: { cpu: '1' } },
          },
        ],
      },
    },
    {
      name: 'ports protocol TCP; probes and handlers',
      spec: {
        containers: [
          {
            name: 'c',
            image: 'nginx:1',
            ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }],
            livenessProbe: { httpGet: { port: 80 } },
            readinessProbe: { tcpSocket: { port: 80 }, periodSeconds: 5 },
            startupProbe: { grpc: { port: 9090 } },
            lifecycle: { preStop: { httpGet: { port: 80, path: '/stop' } }, postStart: { exec: { command: ['true'] } } },
          },
        ],
      },
      want: {
        ...POD_DEFAULTS,
        containers: [
          defaultedC({
            ports: [{ containerPort: 80, protocol: 'TCP' }, { containerPort: 53, protocol: 'UDP' }],
            livenessProbe: { httpGet: { port: 80, path: '/', scheme: 'HTTP' }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 },
            readinessProbe: { tcpSocket: { port: 80 }, periodSeconds: 5, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 },
            startupProbe: { grpc: { port: 9090, service: '' }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 },
            lifecycle: { preStop: { httpGet: { port: 80, path: '/stop', scheme: 'HTTP' } }, postStart: { exec: { command: ['true'] } } },
          }),
        ],
      },
    },
    {
      name: 'env fieldRef apiVersion and resourceFieldRef divisor',
      spec: {
        containers: [
          {
            name: 'c',
            image: 'nginx:1',
            env: [
              { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
              { name: 'PLAIN', value: 'x' },
            ],
          },
        ],
      },
      want: {
        ...POD_DEFAULTS,
        containers: [
          defaultedC({
            env: [
              { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName', apiVersion: 'v1' } } },
              { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '0' } } },
              { name: 'PLAIN', value: 'x' },
            ],
          }),
        ],
      },
    },
    {
      name: 'volumes: defaultMode, hostPath type, emptyDir when no source',
      spec: {
        containers: [{ name: 'c', image: 'nginx:1' }],
        volumes: [
          { name: 'cm', configMap: { name: 'cfg' } },
          { name: 's', secret: { secretName: 'sec' } },
          { name: 'h', hostPath: { path: '/var/log' } },
          { name: 'e' },
          { name: 'd', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
          { name: 'p', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
        ],
      },
      want: {
        ...POD_DEFAULTS,
        containers: [defaultedC()],
        volumes: [
          { name: 'cm', configMap: { name: 'cfg', defaultMode: 420 } },
          { name: 's', secret: { secretName: 'sec', defaultMode: 420 } },
          { name: 'h', hostPath: { path: '/var/log', type: '' } },
          { name: 'e', emptyDir: {} },
          { name: 'd', downwardAPI: { defaultMode: 420, items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels', apiVersion: 'v1' } }] } },
          { name: 'p', projected: { defaultMode: 420, sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }] } },
        ],
      },
    },
    {
      name: 'quantities in canonical form',
      spec: { containers: [{ name: 'c', image: 'nginx:1', resources: { limits: { cpu: '1.5', memory: '1024Mi' }, requests: { cpu: 0.1 } } }] },
      want: {
        ...POD_DEFAULTS,
        containers: [
          { name: 'c', image: 'nginx:1', imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', resources: { limits: { cpu: '1500m', memory: '1Gi' }, requests: { cpu: '100m' } } },
        ],
      },
    },
  ]; // prettier-ignore
  for (const c of cases)
    test(c.name, () => {
      const template: JsonObject = { metadata: { labels: { app: 'x' } }, spec: structuredClone(c.spec) };
      setDefaultsPodTemplate(template);
      assert.deepEqual(template, { metadata: { labels: { app: 'x' } }, spec: c.want });
    });

  test('init and ephemeral containers are defaulted like containers', () => {
    const template: any = {
      spec: { initContainers: [{ name: 'i', image: 'busybox' }], containers: [{ name: 'c', image: 'nginx:1' }] },
    };
    setDefaultsPodTemplate(template);
    assert.equal(template.spec.initContainers[0].imagePullPolicy, 'Always');
    assert.equal(template.spec.initContainers[0].terminationMessagePath, '/dev/termination-log');
  });

  test('serviceAccount and serviceAccountName: the deprecated alias is filled both ways, the new field wins', () => {
    const cases: { given: JsonObject; want: JsonObject }[] = [
      { given: { serviceAccountName: 'a' }, want: { serviceAccountName: 'a', serviceAccount: 'a' } },
      { given: { serviceAccount: 'old' }, want: { serviceAccountName: 'old', serviceAccount: 'old' } },
      {
        given: { serviceAccount: 'old', serviceAccountName: 'new' },
        want: { serviceAccountName: 'new', serviceAccount: 'new' },
      },
      { given: {}, want: {} },
    ];
    for (const { given, want } of cases) {
      const template: any = { spec: { ...given, containers: [] } };
      setDefaultsPodTemplate(template);
      assert.deepEqual(
        { serviceAccount: template.spec.serviceAccount, serviceAccountName: template.spec.serviceAccountName },
        { serviceAccount: want.serviceAccount, serviceAccountName: want.serviceAccountName },
        JSON.stringify(given),
      );
    }
  });

  test('ephemeral volumeClaimTemplate: metadata {} and volumeMode Filesystem', () => {
    const template: any = {
      spec: {
        containers: [],
        volumes: [
          {
            name: 'v',
            ephemeral: { volumeClaimTemplate: { spec: { resources: { requests: { storage: '1.5Gi' } } } } },
          },
        ],
      },
    };
    setDefaultsPodTemplate(template);
    assert.deepEqual(template.spec.volumes[0].ephemeral.volumeClaimTemplate, {
      metadata: {},
      spec: { volumeMode: 'Filesystem', resources: { requests: { storage: '1536Mi' } } },
    });
  });

  test('fields of the wrong type are left for validation', () => {
    const template: any = { spec: { containers: 'nope', volumes: [42] } };
    setDefaultsPodTemplate(template);
    assert.deepEqual(template.spec.containers, 'nope');
    assert.deepEqual(template.spec.volumes, [42]);
  });
});

const manifest = (): any => ({
  apiVersion: 'apps.kruise.io/v1alpha1',
  kind: 'DaemonSet',
  metadata: { name: 'x', namespace: 'ns' },
  spec: {
    selector: { matchLabels: { app: 'x' } },
    template: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } },
  },
});

describe('defaultDaemonSet and defaultingPatch', () => {
  test('the input is not modified', () => {
    const m = manifest();
    const copy = structuredClone(m);
    defaultDaemonSet(m);
    assert.deepEqual(m, copy);
  });

  test('the patch applied to the raw object gives the defaulted object', () => {
    const m = manifest();
    const patch = defaultingPatch(m);
    const patched: any = fastJsonPatch.applyPatch(structuredClone(m), patch).newDocument;
    assert.equal(patched.spec.burstReplicas, 250);
    assert.equal(patched.spec.template.spec.restartPolicy, 'Always');
    assert.deepEqual(patched, defaultDaemonSet(m));
  });

  test('no patch when nothing changes', () => {
    assert.deepEqual(defaultingPatch(defaultDaemonSet(manifest())), []);
  });

  test('unknown fields survive: the patch only adds defaults', () => {
    const m = manifest();
    m.spec.futureField = { keep: true };
    m.spec.template.spec.containers[0].futureContainerField = 'x';
    m.status = { somethingNew: 1 };
    const patch = defaultingPatch(m);
    assert.ok(
      patch.every((op) => op.op === 'add'),
      `only adds: ${JSON.stringify(patch)}`,
    );
    const patched = fastJsonPatch.applyPatch(structuredClone(m), patch).newDocument;
    assert.deepEqual(patched.spec.futureField, { keep: true });
    assert.equal(patched.spec.template.spec.containers[0].futureContainerField, 'x');
    assert.deepEqual(patched.status, { somethingNew: 1 });
  });

  test('on update, an unchanged template is not defaulted (the stored revision hash stays)', () => {
    const old = manifest();
    const next = manifest();
    next.spec.burstReplicas = 5;
    const out: any = defaultDaemonSet(next, old);
    assert.equal(out.spec.template.spec.restartPolicy, undefined);
    assert.equal(out.spec.revisionHistoryLimit, 10, 'Kruise defaults still apply');
  });

  test('on update, a changed template is defaulted', () => {
    const old = manifest();
    const next = manifest();
    next.spec.template.spec.containers[0].image = 'nginx:1.28';
    const out: any = defaultDaemonSet(next, old);
    assert.equal(out.spec.template.spec.restartPolicy, 'Always');
    assert.equal(out.spec.template.spec.containers[0].imagePullPolicy, 'IfNotPresent');
  });
});

describe('defaultingPatch in v1beta1: paths into the object as sent in v1beta1', () => {
  const v1beta1 = (edit: (d: any) => void = () => {}): any => {
    const m: any = daemonSetManifestV1beta1();
    edit(m);
    return m;
  };
  const rows: { name: string; object: () => any; version: ServedVersion; ops: unknown[] }[] = [
    {
      name: 'a minimal manifest: Kruise defaults under /spec, like v1alpha1',
      object: () => v1beta1(),
      version: 'v1beta1',
      ops: [
        { op: 'add', path: '/spec/burstReplicas', value: 250 },
        {
          op: 'add',
          path: '/spec/updateStrategy',
          value: { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Standard', maxUnavailable: 1, maxSurge: 0, unhealthyNodes: 'Count' } },
        },
        { op: 'add', path: '/spec/revisionHistoryLimit', value: 10 },
        { op: 'add', path: '/spec/progressDeadlineSeconds', value: 600 },
      ],
    },
    {
      name: 'partitionedScaling and the partition are left as sent',
      object: () =>
        v1beta1((d) => {
          d.spec.scaleStrategy = { partitionedScaling: true };
          d.spec.updateStrategy = { rollingUpdate: { partition: '50%' } };
        }),
      version: 'v1beta1',
      ops: [
        { op: 'add', path: '/spec/burstReplicas', value: 250 },
        { op: 'add', path: '/spec/updateStrategy/type', value: 'RollingUpdate' },
        { op: 'add', path: '/spec/updateStrategy/rollingUpdate/rollingUpdateType', value: 'Standard' },
        { op: 'add', path: '/spec/updateStrategy/rollingUpdate/maxUnavailable', value: 1 },
        { op: 'add', path: '/spec/updateStrategy/rollingUpdate/maxSurge', value: 0 },
        { op: 'add', path: '/spec/updateStrategy/rollingUpdate/unhealthyNodes', value: 'Count' },
        { op: 'add', path: '/spec/revisionHistoryLimit', value: 10 },
        { op: 'add', path: '/spec/progressDeadlineSeconds', value: 600 },
      ],
    },
    {
      name: 'Surging is not rewritten in v1beta1 (validation refuses it)',
      object: () => v1beta1((d) => (d.spec.updateStrategy = { rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: 1 } })),
      version: 'v1beta1',
      ops: [
        { op: 'add', path: '/spec/burstReplicas', value: 250 },
        { op: 'add', path: '/spec/updateStrategy/type', value: 'RollingUpdate' },
        { op: 'add', path: '/spec/updateStrategy/rollingUpdate/unhealthyNodes', value: 'Count' },
        { op: 'add', path: '/spec/revisionHistoryLimit', value: 10 },
        { op: 'add', path: '/spec/progressDeadlineSeconds', value: 600 },
      ],
    },
    {
      name: 'the same Surging sent as v1alpha1 is rewritten to Standard',
      object: () => v1beta1((d) => (d.spec.updateStrategy = { rollingUpdate: { rollingUpdateType: 'Surging', maxSurge: 1 } })),
      version: 'v1alpha1',
      ops: [
        { op: 'add', path: '/spec/burstReplicas', value: 250 },
        { op: 'add', path: '/spec/updateStrategy/type', value: 'RollingUpdate' },
        { op: 'replace', path: '/spec/updateStrategy/rollingUpdate/rollingUpdateType', value: 'Standard' },
        { op: 'add', path: '/spec/updateStrategy/rollingUpdate/maxUnavailable', value: 0 },
        { op: 'add', path: '/spec/updateStrategy/rollingUpdate/unhealthyNodes', value: 'Count' },
        { op: 'add', path: '/spec/revisionHistoryLimit', value: 10 },
        { op: 'add', path: '/spec/progressDeadlineSeconds', value: 600 },
      ],
    },
  ]; // prettier-ignore
  for (const row of rows)
    test(`${row.version}: ${row.name}`, () => {
      const obj = row.object();
      // The template's apps/v1 defaults are the same in both versions; the rows look at the Kruise part, in
      // path order (fast-json-patch's order is its walk's).
      const byPath = (ops: any[]) => [...ops].sort((a, b) => a.path.localeCompare(b.path));
      const patch = defaultingPatch(obj, undefined, row.version).filter((op) => !op.path.startsWith('/spec/template'));
      assert.deepEqual(byPath(patch), byPath(row.ops));
      const full = defaultingPatch(obj, undefined, row.version);
      assert.deepEqual(
        fastJsonPatch.applyPatch(structuredClone(obj), full).newDocument,
        defaultDaemonSet(obj, undefined, row.version),
      );
    });

  test('the v1beta1 and v1alpha1 patches of the same manifest are the same (no Surging, no alias)', () => {
    assert.deepEqual(
      defaultingPatch(daemonSetManifestV1beta1(), undefined, 'v1beta1'),
      defaultingPatch(daemonSetManifest()),
    );
  });

  test('on update, an unchanged template is not defaulted in v1beta1 either', () => {
    const old = v1beta1((d) => (d.spec.scaleStrategy = { partitionedScaling: false }));
    const next = v1beta1((d) => (d.spec.scaleStrategy = { partitionedScaling: true }));
    const out: any = defaultDaemonSet(next, old, 'v1beta1');
    assert.equal(out.spec.template.spec.restartPolicy, undefined);
    assert.deepEqual(out.spec.scaleStrategy, { partitionedScaling: true });
  });
});

describe('hostile keys are plain data', () => {
  test('a __proto__ key in a container is kept and changes no default', () => {
    const text = JSON.stringify(daemonSetManifest()).replace(
      '"image":"nginx:1.27"',
      '"image":"nginx:1.27","__proto__":{"imagePullPolicy":"Never","terminationMessagePath":"/evil"}',
    );
    const out: any = defaultDaemonSet(JSON.parse(text));
    const c = out.spec.template.spec.containers[0];
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
    assert.equal(c.terminationMessagePath, '/dev/termination-log');
    assert.ok(Object.hasOwn(c, '__proto__'));
    assert.equal(Object.getPrototypeOf(c), Object.prototype);
    assert.ok(JSON.stringify(out).includes('"__proto__":{"imagePullPolicy":"Never"'));
  });
  test('a __proto__ resource name is left as written; constructor is canonicalized like any name', () => {
    const text = JSON.stringify(daemonSetManifest()).replace(
      '"image":"nginx:1.27"',
      '"image":"nginx:1.27","resources":{"limits":{"__proto__":"1.0","constructor":"0.5","cpu":"1.0"}}',
    );
    const ds = JSON.parse(text);
    const out: any = defaultDaemonSet(ds);
    const limits = out.spec.template.spec.containers[0].resources.limits;
    assert.equal(JSON.stringify(limits), '{"__proto__":"1.0","constructor":"500m","cpu":"1"}');
    const patch = defaultingPatch(ds);
    assert.ok(
      patch.every((op) => !op.path.includes('__proto__')),
      JSON.stringify(patch),
    );
  });
});

describe('templatePatchLowerBound: never above the real patch, close to it for many bare containers', () => {
  const withContainers = (containers: unknown[], extra: JsonObject = {}): JsonObject => {
    const ds: any = daemonSetManifest();
    ds.spec.template.spec = { ...ds.spec.template.spec, ...extra, containers };
    return ds;
  };
  const bare = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, image: i % 2 ? 'x' : 'x:1' }));
  const patchBytes = (obj: JsonObject, old?: JsonObject) => JSON.stringify(defaultingPatch(obj, old)).length;
  const rows: { name: string; obj: JsonObject; old?: JsonObject; tight?: boolean }[] = [
    { name: 'the fixture', obj: daemonSetManifest() as JsonObject },
    { name: '2,000 bare containers', obj: withContainers(bare(2_000)), tight: true },
    {
      name: 'containers with every certain default already set',
      obj: withContainers(
        bare(50).map((c) => ({ ...c, imagePullPolicy: 'Never', terminationMessagePath: '/t', terminationMessagePolicy: 'File', resources: {} })),
      ),
    },
    {
      name: 'zero and null values (replace operations)',
      obj: withContainers(bare(50).map((c) => ({ ...c, imagePullPolicy: '', terminationMessagePath: null, resources: null }))),
    },
    {
      name: 'init and ephemeral containers, and items that are not objects',
      obj: withContainers([...bare(10), 7, null], { initContainers: bare(5), ephemeralContainers: bare(3) }),
    },
    { name: 'an update that keeps the template', obj: withContainers(bare(200)), old: withContainers(bare(200)) },
    { name: 'an update that changes the template', obj: withContainers(bare(200)), old: withContainers(bare(199)) },
  ]; // prettier-ignore
  for (const row of rows)
    test(row.name, () => {
      const bound = templatePatchLowerBound(row.obj, row.old, Infinity);
      const real = patchBytes(row.obj, row.old);
      assert.ok(bound <= real, `bound ${bound} > real patch ${real}`);
      if (row.tight) assert.ok(bound >= 0.9 * real, `bound ${bound} far below real patch ${real}`);
    });
  test('an unchanged template counts nothing; counting stops past the limit', () => {
    const obj = withContainers(bare(200));
    assert.equal(templatePatchLowerBound(obj, withContainers(bare(200)), Infinity), 0);
    const capped = templatePatchLowerBound(withContainers(bare(10_000)), undefined, 1_000);
    assert.ok(capped > 1_000 && capped < 2_000, `stopped at ${capped}`);
  });
});
