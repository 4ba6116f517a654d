// Copy-on-write defaulting (defaults.ts) against the deep copy defaulted in place and compared whole that it
// replaced (testing/defaults-reference.ts): the same patch, operation for operation and in the same order, the same
// defaulted object with its keys in the same order, the in-place functions the same, and the input untouched
// (frozen: a write into it throws). Over a table of objects that reach every default, and seeded random changes
// of them (nulls, zero values, wrong types, dropped fields, `__proto__` keys).
//
//   DEFAULTS_SEED=1234 node --import tsx --test src/api/defaults-reference.test.ts    # replays one run
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fastJsonPatch from 'fast-json-patch';
import { SERVED_VERSIONS, type ServedVersion } from './constants.ts';
import {
  defaultDaemonSet,
  defaultedPodTemplate,
  defaultingPatch,
  setDefaultsDaemonSet,
  setDefaultsPodTemplate,
  type JsonObject,
} from './defaults.ts';
import * as reference from './testing/defaults-reference.ts';
import { daemonSetManifest } from './testing/review-fixtures.ts';
import { pick, seededRandom, type Rand } from '../testing/random.ts';
import { changeRandomSlots, setOwn } from '../testing/json-slots.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const SEED = Number(process.env.DEFAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RANDOM_OBJECTS = Number(process.env.DEFAULTS_RANDOM_OBJECTS ?? 3_000);

/** A manifest with `edit` applied to its spec and its pod spec. */
function ds(edit: (spec: any, podSpec: any) => void = () => {}): JsonObject {
  const m: any = daemonSetManifest();
  edit(m.spec, m.spec.template.spec);
  return m;
}

const fullContainer = {
  name: 'agent',
  image: 'registry.example.com/agent:latest',
  ports: [{ containerPort: 80 }, { containerPort: 81, protocol: '' }, 5, { containerPort: 82, protocol: 'UDP' }],
  env: [
    { name: 'A', value: 'x' },
    { name: 'N', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    { name: 'M', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1024Ki' } } },
    { name: 'Z', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' }, fieldRef: { apiVersion: 'v2', fieldPath: 'x' } } },
  ],
  resources: { limits: { cpu: '0.5', memory: '1Gi', odd: 'not a quantity' }, requests: { cpu: 0.0001, memory: 1e3 } },
  livenessProbe: { httpGet: { port: 80 }, timeoutSeconds: 0 },
  readinessProbe: { grpc: { port: 9 }, periodSeconds: 3 },
  startupProbe: { httpGet: { port: 80, path: '/up', scheme: 'HTTPS' }, failureThreshold: 30 },
  lifecycle: { postStart: { httpGet: { port: 1 } }, preStop: { exec: { command: ['x'] } } },
}; // prettier-ignore

const allVolumes = [
  { name: 'none' },
  { name: 'hp', hostPath: { path: '/' } },
  { name: 'ed', emptyDir: { sizeLimit: '1000Mi' } },
  { name: 'ed2', emptyDir: null, secret: { secretName: 's' } },
  { name: 'is', iscsi: { iscsiInterface: '' } },
  { name: 'rbd', rbd: { pool: '', monitors: ['m'] } },
  { name: 'dapi', downwardAPI: { items: [{ path: 'a', fieldRef: { fieldPath: 'metadata.name' } }, { path: 'b', resourceFieldRef: { resource: 'limits.cpu', divisor: 1 } }, 'x'] } },
  { name: 'cm', configMap: { name: 'c', defaultMode: 0o400 } },
  { name: 'az', azureDisk: { diskName: 'd', diskURI: 'u', readOnly: null } },
  { name: 'pr', projected: { sources: [{ downwardAPI: { items: [{ path: 'c', fieldRef: { fieldPath: 'x' } }] } }, { serviceAccountToken: { path: 't' } }, { configMap: { name: 'c' } }] } },
  { name: 'sio', scaleIO: { gateway: 'g', system: 's', secretRef: { name: 'n' } } },
  { name: 'eph', ephemeral: { volumeClaimTemplate: { spec: { resources: { requests: { storage: '1.5Gi' } } } } } },
  { name: 'eph2', ephemeral: { volumeClaimTemplate: { metadata: 'x', spec: { volumeMode: 'Block', resources: null } } } },
  { name: 'img', image: { reference: 'registry.example.com/data:latest' } },
  { name: 'img2', image: { reference: 'data:v1', pullPolicy: '' } },
  7,
  null,
]; // prettier-ignore

/** Objects that reach every default, its zero values and its wrong types; each as v1alpha1 and v1beta1. */
const ROWS: { name: string; obj: () => JsonObject }[] = [
  { name: 'the fixture', obj: () => ds() },
  { name: 'no spec', obj: () => ({ apiVersion: 'apps.kruise.io/v1alpha1', kind: 'DaemonSet', metadata: { name: 'x' } }) },
  { name: 'spec null', obj: () => ({ ...ds(), spec: null }) },
  { name: 'spec a string', obj: () => ({ ...ds(), spec: 'x' }) },
  { name: 'template null', obj: () => ds((s) => (s.template = null)) },
  { name: 'template spec absent', obj: () => ds((s) => (s.template = { metadata: { labels: { app: 'x' } } })) },
  { name: 'defaulted already', obj: () => reference.defaultDaemonSet(ds()) },
  { name: 'a full container, init and ephemeral too', obj: () => ds((_, p) => {
    p.containers = [fullContainer, { ...fullContainer, name: 'b', image: 'b:v1', imagePullPolicy: 'Never', resources: null }, null, 'x'];
    p.initContainers = [{ ...fullContainer, name: 'i' }];
    p.ephemeralContainers = [{ name: 'e', image: 'e', terminationMessagePath: '', resources: 'bad' }];
  }) },
  { name: 'every volume source', obj: () => ds((_, p) => (p.volumes = allVolumes)) },
  { name: 'pod fields: zero values, serviceAccount alias, overhead, pod resources', obj: () => ds((_, p) => {
    Object.assign(p, { dnsPolicy: '', restartPolicy: null, securityContext: null, terminationGracePeriodSeconds: 0, schedulerName: 0 });
    Object.assign(p, { serviceAccount: 'old', overhead: { cpu: '0.1' }, resources: { limits: { cpu: '1.0' }, requests: { memory: '0.5Gi' } } });
  }) },
  { name: 'serviceAccountName wins over serviceAccount', obj: () => ds((_, p) => Object.assign(p, { serviceAccount: 'a', serviceAccountName: 'b' })) },
  { name: 'OnDelete', obj: () => ds((s) => (s.updateStrategy = { type: 'OnDelete', rollingUpdate: { type: 'Surging' } })) },
  { name: 'rollingUpdate.type alias', obj: () => ds((s) => (s.updateStrategy = { rollingUpdate: { type: 'Surging', partition: 2 } })) },
  { name: 'the alias and rollingUpdateType differ', obj: () => ds((s) => (s.updateStrategy = { rollingUpdate: { type: 'Surging', rollingUpdateType: 'Standard' } })) },
  { name: 'the alias and rollingUpdateType agree', obj: () => ds((s) => (s.updateStrategy = { type: '', rollingUpdate: { type: 'Standard', rollingUpdateType: 'Standard' } })) },
  { name: 'Surging with maxUnavailable', obj: () => ds((s) => (s.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { rollingUpdateType: 'Surging', maxUnavailable: 2 } })) },
  { name: 'rollingUpdate null, strategy type null', obj: () => ds((s) => (s.updateStrategy = { type: null, rollingUpdate: null })) },
  { name: 'rollingUpdate a string', obj: () => ds((s) => (s.updateStrategy = { rollingUpdate: 'x' })) },
  { name: 'canary in Auto, waves', obj: () => ds((s) => (s.updateStrategy = { rollingUpdate: { canary: { duration: '' }, waves: { count: 3 } } })) },
  { name: 'canary in Manual, autoPause null, autoFail a string', obj: () => ds((s) => (s.updateStrategy = { rollingUpdate: { canary: { validation: 'Manual', autoPause: null, autoFail: 'x', nodes: 0 } } })) },
  { name: 'nodeReadiness Continuous with a taint, no tolerations', obj: () => ds((s) => (s.nodeReadiness = { mode: 'Continuous', taint: { key: 'k' } })) },
  { name: 'nodeReadiness: a taint already tolerated', obj: () => ds((s, p) => {
    s.nodeReadiness = { taint: { key: 'k', effect: 'NoExecute' } };
    p.tolerations = [{ key: 'k', operator: 'Exists' }];
  }) },
  { name: 'nodeReadiness: other tolerations', obj: () => ds((s, p) => {
    s.nodeReadiness = { taint: { key: 'k', value: 'v' } };
    p.tolerations = [{ key: 'other', operator: 'Exists' }, null];
  }) },
  { name: 'nodeReadiness: tolerations null', obj: () => ds((s, p) => ((s.nodeReadiness = { taint: { key: 'k' } }), (p.tolerations = null))) },
  { name: 'nodeReadiness with a taint and no template', obj: () => ds((s) => ((s.nodeReadiness = { taint: { key: 'k' } }), delete s.template)) },
  { name: 'nodeReadiness with an empty taint key', obj: () => ds((s) => (s.nodeReadiness = { mode: '', taint: { key: '' } })) },
  { name: 'minReadySeconds at the deadline', obj: () => ds((s) => (s.minReadySeconds = 600)) },
  { name: 'Kruise fields zero or null', obj: () => ds((s) => Object.assign(s, { burstReplicas: null, revisionHistoryLimit: null, progressDeadlineSeconds: null, updateStrategy: null })) },
  { name: '__proto__ keys', obj: () =>
    JSON.parse(JSON.stringify(ds((_, p) => (p.containers = [fullContainer]))).replace(
      '"name":"agent"',
      '"__proto__":{"imagePullPolicy":"Never"},"name":"agent"',
    ).replace('"limits":{', '"limits":{"__proto__":"1.0","constructor":"0.5",')) },
]; // prettier-ignore

/** Freezes the value and everything in it: a write into it then throws (ES modules are strict). */
function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) deepFreeze((v as any)[k]);
    Object.freeze(v);
  }
  return v;
}

/** The JSON text of a value as JSON.parse made it (`__proto__` keys are own properties there and here). */
const text = (v: unknown) => JSON.stringify(v);

/** Checks one object (and an old one, for an update) against the reference, in `version`. */
function checkSame(obj: JsonObject, old: JsonObject | undefined, version: ServedVersion, where: string): void {
  const input = text(obj);
  deepFreeze(obj);
  if (old) deepFreeze(old);
  const want = reference.defaultingPatch(structuredClone(obj), old && structuredClone(old), version);
  const got = defaultingPatch(obj, old, version);
  assert.deepEqual(got, want, `patch, ${where}`);
  const defaulted = defaultDaemonSet(obj, old, version);
  assert.equal(text(defaulted), text(reference.defaultDaemonSet(obj, old, version)), `defaulted object, ${where}`);
  if (got.length > 0)
    assert.equal(
      text(fastJsonPatch.applyPatch(JSON.parse(input), got).newDocument),
      text(defaulted),
      `patched, ${where}`,
    );
  assert.equal(text(obj), input, `the input is unchanged, ${where}`);

  // The in-place functions, on copies of their own.
  const inPlace = JSON.parse(input);
  const inPlaceReference = JSON.parse(input);
  setDefaultsDaemonSet(inPlace, version);
  reference.setDefaultsDaemonSet(inPlaceReference, version);
  assert.equal(text(inPlace), text(inPlaceReference), `setDefaultsDaemonSet, ${where}`);
  const template = (obj.spec as any)?.template;
  if (typeof template === 'object' && template !== null && !Array.isArray(template)) {
    const want = JSON.parse(text(template));
    reference.setDefaultsPodTemplate(want);
    assert.equal(text(defaultedPodTemplate(template)), text(want), `defaultedPodTemplate, ${where}`);
    const got = JSON.parse(text(template));
    const spec = got.spec;
    setDefaultsPodTemplate(got);
    assert.equal(text(got), text(want), `setDefaultsPodTemplate, ${where}`);
    if (typeof spec === 'object' && spec !== null && !Array.isArray(spec))
      assert.equal(got.spec, spec, `setDefaultsPodTemplate keeps the pod spec object, ${where}`);
  }
}

/** A copy of its own (the rows share parts, and the checks freeze them) in `version`. */
const asVersion = (obj: JsonObject, version: ServedVersion): JsonObject => ({
  ...(JSON.parse(JSON.stringify(obj)) as JsonObject),
  apiVersion: `apps.kruise.io/${version}`,
});

describe('copy-on-write defaulting gives what the deep copy defaulted in place gave', () => {
  for (const version of SERVED_VERSIONS)
    for (const row of ROWS) {
      test(`${row.name} (${version})`, () => checkSame(asVersion(row.obj(), version), undefined, version, row.name));
      test(`${row.name} (${version}), an update of the fixture`, () =>
        checkSame(asVersion(row.obj(), version), asVersion(ds(), version), version, row.name));
      test(`${row.name} (${version}), an update that keeps the template`, () =>
        checkSame(asVersion(row.obj(), version), asVersion(row.obj(), version), version, row.name));
    }
});

// ---------------------------------------------------------------------------------------------------------
// Random changes of the table's objects

const VALUES: unknown[] = [null, 0, '', 'x', 1, -1, true, {}, [], [null], '0.5', '1Gi', 'Always', 'Auto', 'Surging', 'RollingUpdate', { key: 'k' }, { port: 1 }]; // prettier-ignore

/** One to four changes: a value replaced, a field dropped, or a `__proto__` key added. */
function change(r: Rand, obj: JsonObject): void {
  changeRandomSlots(r, obj, 4, (parent, key) => {
    const kind = r();
    if (kind < 0.6) setOwn(parent, key, structuredClone(pick(r, VALUES)));
    else if (kind < 0.85) {
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
    } else if (typeof parent[key] === 'object' && parent[key] !== null && !Array.isArray(parent[key]))
      setOwn(parent[key], '__proto__', structuredClone(pick(r, VALUES)));
  });
}

test(`random changes of the table's objects: the same patch and object (seed ${SEED})`, () => {
  const r = seededRandom(SEED);
  for (let i = 0; i < RANDOM_OBJECTS; i++) {
    const version = pick(r, SERVED_VERSIONS);
    const obj = asVersion(pick(r, ROWS).obj(), version);
    change(r, obj);
    const old = r() < 0.3 ? asVersion(pick(r, ROWS).obj(), version) : undefined;
    if (old && r() < 0.5) change(r, old);
    checkSame(obj, old, version, `object ${i} (seed ${SEED}): ${text(obj).slice(0, 2000)}`);
  }
});
