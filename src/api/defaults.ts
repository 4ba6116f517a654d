// Defaulting of apps.kruise.io DaemonSet (v1alpha1 and v1beta1), as pure functions over plain JSON, each object
// defaulted in the version it was sent in.
//
// 1. Kruise's SetDefaultsDaemonSet (apis/apps/defaults/v1alpha1.go) and, for v1beta1, SetDefaultsDaemonSetV1beta1
//    (https://github.com/openkruise/kruise/blob/v1.9.0/apis/apps/defaults/v1beta1.go: the same minus Surging and
//    the `rollingUpdate.type` alias, which v1beta1 does not have), exactly.
// 2. Beyond Kruise: a new or changed pod template is defaulted as kube-apiserver defaults the template of an
//    apps/v1 DaemonSet (pkg/apis/apps/v1 SetObjectDefaults_DaemonSet → core/v1 SetDefaults_PodSpec, _Container,
//    _Probe, _Volume ...), plus the two artifacts of its typed serialization that `kubectl get -o yaml` shows
//    (`resources: {}` on containers, `divisor: "0"` on resourceFieldRef) and canonical quantity strings.
//    Pod-only defaults (requests from limits, enableServiceLinks, hostNetwork hostPorts) do not apply to
//    templates upstream, so not here either.
//
// Input objects may not match the schema yet (the apiserver checks it after mutating webhooks), so every
// accessor tolerates wrong types: a field of the wrong type is left alone for validation to report. Keys are
// plain data: only own properties are read, fields are written under fixed names, and objects are copied with
// spread or cloneJson, which keep a `__proto__` key (JSON.parse makes it an own property) as an own property.
//
// Defaulting is copy-on-write (Draft): an object is copied, shallowly, only when a default is written into it or
// into an object below it, so the defaulted DaemonSet shares every untouched part with the input, and the
// patch's comparison skips those parts by reference, and validation defaults its template without a copy. A deep
// copy of spec, defaulted in place and compared whole, was 14% of the mutating webhook's CPU at saturation; in
// process, a whole review of the benchmark's DaemonSet (bench/webhook.ts) went from 51.2 to 48.7 µs (mutate) and
// from 40.5 to 37.6 µs (validate) with it (bench/history.md, section 4, "Copy-on-write defaulting").
import fastJsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import {
  DEFAULT_BURST_REPLICAS,
  DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS,
  DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS,
  DEFAULT_CANARY_DURATION,
  DEFAULT_CANARY_NO_RESTARTS_DURATION,
  DEFAULT_CANARY_NODES,
  DEFAULT_CANARY_VALIDATION,
  DEFAULT_NODE_READINESS_UNREADY_SECONDS,
  DEFAULT_PROGRESS_DEADLINE_SECONDS,
  DEFAULT_REVISION_HISTORY_LIMIT,
  DEFAULT_UNHEALTHY_NODES,
  VERSION,
  type ServedVersion,
} from './constants.ts';
import { defaultImagePullPolicy } from './image.ts';
import { cloneJson } from '../k8s/json.ts';
import { toleratesTaint } from '../k8s/scheduling.ts';
import type { Taint, Toleration } from '../k8s/types.ts';
import { formatQuantity, quantityFromJSON, roundUpToMilli } from './quantity.ts';

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const objectAt = (obj: JsonObject, key: string): JsonObject | undefined => {
  const v = obj[key];
  return isObject(v) ? v : undefined;
};

/**
 * A JSON object being defaulted, copy-on-write: `out` is the object as defaulted so far, `base` itself until the
 * first write, which copies it shallowly (spread: its keys in their order, a new key appended as an assignment in
 * place appends it). Reads go through `get`, so they see the writes.
 */
class Draft {
  out: JsonObject;
  private copied: boolean;
  constructor(
    readonly base: JsonObject,
    /** A new object of our own: written in place. */
    fresh = false,
  ) {
    this.out = base;
    this.copied = fresh;
  }
  get(key: string): unknown {
    return this.out[key];
  }
  set(key: string, value: unknown): void {
    if (this.out[key] === value && Object.hasOwn(this.out, key)) return;
    this.own()[key] = value;
  }
  delete(key: string): void {
    if (Object.hasOwn(this.out, key)) delete this.own()[key];
  }
  private own(): JsonObject {
    if (!this.copied) {
      this.out = { ...this.base };
      this.copied = true;
    }
    return this.out;
  }
}

/** Defaults the object at draft[key] with `f`, writing it back if `f` changed it; nothing when no object is there. */
function editObject(d: Draft, key: string, f: (child: Draft) => void): void {
  const v = d.get(key);
  if (!isObject(v)) return;
  const child = new Draft(v);
  f(child);
  d.set(key, child.out);
}

/** editObject on the object at draft[key], created as {} when absent or null; nothing when a non-object is there. */
function editEnsured(d: Draft, key: string, f: (child: Draft) => void): void {
  const v = d.get(key);
  if (v !== undefined && v !== null) return editObject(d, key, f);
  const child = new Draft({}, true);
  f(child);
  d.set(key, child.out);
}

/** editObject on each object of the list at draft[key]; the list is copied if one of them changed. */
function editEach(d: Draft, key: string, f: (item: Draft) => void): void {
  const list = d.get(key);
  if (!Array.isArray(list)) return;
  let out: unknown[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const v: unknown = list[i];
    if (!isObject(v)) continue;
    const item = new Draft(v);
    f(item);
    if (item.out !== v) (out ??= list.slice())[i] = item.out;
  }
  if (out) d.set(key, out);
}

/** Go pointer fields: default when absent or null. */
function setIfNil(d: Draft, key: string, value: unknown): void {
  const v = d.get(key);
  if (v === undefined || v === null) d.set(key, value);
}

/** Go value fields (string, int): default when absent, null or the zero value. */
function setIfZero(d: Draft, key: string, value: unknown): void {
  const v = d.get(key);
  if (v === undefined || v === null || v === '' || v === 0) d.set(key, value);
}

/**
 * Writes what defaulting changed into `target` in place (the exported in-place functions): `result` is `target`
 * defaulted copy-on-write, so an object that differs is a copy of the one in place, merged into it key by key,
 * which keeps the identity of every object of `target` and its keys' order.
 */
function writeBack(target: JsonObject | unknown[], result: JsonObject | unknown[]): void {
  if (target === result) return;
  if (Array.isArray(target)) {
    const r = result as unknown[];
    for (let i = 0; i < r.length; i++) target[i] = merged(target[i], r[i]);
    target.length = r.length;
    return;
  }
  const r = result as JsonObject;
  for (const key of Object.keys(target)) if (!Object.hasOwn(r, key)) delete target[key];
  for (const key of Object.keys(r)) {
    const v = merged(Object.hasOwn(target, key) ? target[key] : undefined, r[key]);
    if (target[key] === v && Object.hasOwn(target, key)) continue;
    if (key === '__proto__')
      Object.defineProperty(target, key, { value: v, writable: true, enumerable: true, configurable: true });
    else target[key] = v;
  }
}

/** `to` merged into `from` when both are objects (or both lists), else `to`. */
function merged(from: unknown, to: unknown): unknown {
  if (from === to || typeof from !== 'object' || from === null || typeof to !== 'object' || to === null) return to;
  if (Array.isArray(from) !== Array.isArray(to)) return to;
  writeBack(from as JsonObject, to as JsonObject);
  return from;
}

// ---------------------------------------------------------------------------------------------------------
// Kruise SetDefaultsDaemonSet

/**
 * `rollingUpdate.type` -> `rollingUpdateType`. Not Kruise (docs/differences.md#rollingupdatetype-alias): articles
 * about Advanced DaemonSet write `type: Surging` inside rollingUpdate, which Kruise's own CRD refuses as an unknown
 * field. We accept it as an alias so such a manifest works as its author meant; when both are set and differ,
 * `type` stays for the validating webhook to refuse.
 */
function moveRollingUpdateTypeAlias(ru: Draft): void {
  if (ru.get('type') === undefined) return;
  const current = ru.get('rollingUpdateType');
  const unset = current === undefined || current === null || current === '';
  if (unset) ru.set('rollingUpdateType', ru.get('type'));
  if (unset || ru.get('rollingUpdateType') === ru.get('type')) ru.delete('type');
}

/**
 * rollingUpdate.canary, as ExtendedDaemonSet defaults its canary
 * (https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/extendeddaemonset_default.go): nodes 1,
 * validation Auto, and in Auto mode only duration 10m and noRestartsDuration 5m; autoPause and autoFail enabled
 * with maxRestarts 2 and 5. Not Kruise: it has no canary.
 */
function defaultCanary(canary: Draft): void {
  setIfNil(canary, 'nodes', DEFAULT_CANARY_NODES);
  setIfZero(canary, 'validation', DEFAULT_CANARY_VALIDATION);
  if (canary.get('validation') === 'Auto') {
    setIfZero(canary, 'duration', DEFAULT_CANARY_DURATION);
    setIfZero(canary, 'noRestartsDuration', DEFAULT_CANARY_NO_RESTARTS_DURATION);
  }
  editEnsured(canary, 'autoPause', (autoPause) => {
    setIfNil(autoPause, 'enabled', true);
    setIfNil(autoPause, 'maxRestarts', DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS);
  });
  editEnsured(canary, 'autoFail', (autoFail) => {
    setIfNil(autoFail, 'enabled', true);
    setIfNil(autoFail, 'maxRestarts', DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS);
  });
}

/**
 * Kruise's SetDefaultsDaemonSet (v1alpha1) or SetDefaultsDaemonSetV1beta1 on `ds` (mutated in place). They differ
 * only in what v1alpha1 has and v1beta1 lacks: the `rollingUpdate.type` alias and the deprecated Surging type
 * (in v1beta1 `Surging` is left for the validating webhook to refuse). Beyond Kruise, in both versions:
 * progressDeadlineSeconds 600 as a Deployment's (it only sets the Progressing condition, never stops a rollout, so
 * every DaemonSet gets the signal a Deployment gives `kubectl wait` and GitOps health checks; any pod updated, ready
 * or available is progress, so only a stuck rollout trips it), and the canary's defaults (defaultCanary).
 */
export function setDefaultsDaemonSet(ds: JsonObject, version: ServedVersion = VERSION): void {
  const draft = new Draft(ds);
  editEnsured(draft, 'spec', (spec) => defaultDaemonSetSpec(spec, version));
  writeBack(ds, draft.out);
}

/** setDefaultsDaemonSet's work on spec. */
function defaultDaemonSetSpec(spec: Draft, version: ServedVersion): void {
  const v1alpha1 = version === VERSION;
  setIfNil(spec, 'burstReplicas', DEFAULT_BURST_REPLICAS);
  editEnsured(spec, 'updateStrategy', (strategy) => {
    setIfZero(strategy, 'type', 'RollingUpdate');
    if (v1alpha1) editObject(strategy, 'rollingUpdate', moveRollingUpdateTypeAlias);
    if (strategy.get('type') !== 'RollingUpdate') return;
    editEnsured(strategy, 'rollingUpdate', (ru) => {
      const surging = v1alpha1 && ru.get('rollingUpdateType') === 'Surging';
      if (surging) {
        setIfNil(ru, 'maxSurge', 1);
        setIfNil(ru, 'maxUnavailable', 0);
      }
      const type = ru.get('rollingUpdateType');
      if (type === undefined || type === null || type === '' || surging) ru.set('rollingUpdateType', 'Standard');
      const unset = (k: string) => ru.get(k) === undefined || ru.get(k) === null;
      if (unset('maxUnavailable') && unset('maxSurge')) {
        ru.set('maxUnavailable', 1);
        ru.set('maxSurge', 0);
      }
      setIfZero(ru, 'unhealthyNodes', DEFAULT_UNHEALTHY_NODES);
      editObject(ru, 'canary', defaultCanary);
      // Not Kruise (no waves there): the next wave may start as soon as the last one is available.
      editObject(ru, 'waves', (waves) => setIfNil(waves, 'availableSeconds', 0));
    });
  });
  setIfNil(spec, 'revisionHistoryLimit', DEFAULT_REVISION_HISTORY_LIMIT);
  defaultNodeReadiness(spec);
  // Not where minReadySeconds reaches the default: it must be above minReadySeconds, and a manifest Kruise accepts
  // is not refused for a field its author never wrote (such a DaemonSet has no deadline unless it sets one).
  const minReadySeconds = spec.get('minReadySeconds');
  const minReady = typeof minReadySeconds === 'number' ? minReadySeconds : 0;
  if (minReady < DEFAULT_PROGRESS_DEADLINE_SECONDS)
    setIfNil(spec, 'progressDeadlineSeconds', DEFAULT_PROGRESS_DEADLINE_SECONDS);
}

/**
 * spec.nodeReadiness: mode Bootstrap, effect NoSchedule, unreadySeconds 30 under Continuous; and a toleration of the
 * taint in the pod template (operator Exists, the taint's effect), unless one tolerates it already, so the DaemonSet's
 * pod schedules on the node its taint keeps other workloads off.
 */
function defaultNodeReadiness(spec: Draft): void {
  let taint: JsonObject | undefined;
  editObject(spec, 'nodeReadiness', (readiness) => {
    setIfZero(readiness, 'mode', 'Bootstrap');
    if (readiness.get('mode') === 'Continuous')
      setIfNil(readiness, 'unreadySeconds', DEFAULT_NODE_READINESS_UNREADY_SECONDS);
    const t = readiness.get('taint');
    if (!isObject(t) || typeof t.key !== 'string' || t.key === '') return;
    editObject(readiness, 'taint', (d) => {
      setIfZero(d, 'effect', 'NoSchedule');
      taint = d.out;
    });
  });
  const tainted = taint;
  if (!tainted) return;
  editEnsured(spec, 'template', (template) =>
    editEnsured(template, 'spec', (podSpec) => {
      const list = podSpec.get('tolerations');
      const tolerations = Array.isArray(list) ? list : [];
      const tolerated = tolerations.some(
        (t) => isObject(t) && toleratesTaint(t as Toleration, tainted as unknown as Taint),
      );
      if (!tolerated)
        podSpec.set('tolerations', [...tolerations, { key: tainted.key, operator: 'Exists', effect: tainted.effect }]);
    }),
  );
}

// ---------------------------------------------------------------------------------------------------------
// apps/v1 pod template defaults

/** A ResourceList: quantities in canonical form; `roundUp` applies SetDefaults_ResourceList (milli). */
function defaultResourceList(list: Draft, roundUp: boolean): void {
  for (const [name, raw] of Object.entries(list.base)) {
    // Left as written: `__proto__` is no resource name (validation refuses it), and a patch through a
    // `__proto__` path is refused by JSON-patch libraries in JavaScript.
    if (name === '__proto__') continue;
    const q = quantityFromJSON(raw);
    if (typeof q === 'string') continue; // unparseable: left for validation to report
    list.set(name, formatQuantity(roundUp ? roundUpToMilli(q) : q));
  }
}

const roundedUp = (list: Draft) => defaultResourceList(list, true);
const asWritten = (list: Draft) => defaultResourceList(list, false);

function canonicalQuantityField(d: Draft, key: string): void {
  const v = d.get(key);
  if (v === undefined || v === null) return;
  const q = quantityFromJSON(v);
  if (typeof q !== 'string') d.set(key, formatQuantity(q));
}

function defaultObjectFieldSelector(ref: Draft): void {
  setIfZero(ref, 'apiVersion', 'v1');
}

/** ResourceFieldSelector.divisor is a non-pointer Quantity: typed serialization writes "0" when unset. */
function defaultResourceFieldSelector(ref: Draft): void {
  setIfNil(ref, 'divisor', '0');
  canonicalQuantityField(ref, 'divisor');
}

function defaultHTTPGetAction(action: Draft): void {
  setIfZero(action, 'path', '/');
  setIfZero(action, 'scheme', 'HTTP');
}

function defaultProbe(probe: Draft): void {
  setIfZero(probe, 'timeoutSeconds', 1);
  setIfZero(probe, 'periodSeconds', 10);
  setIfZero(probe, 'successThreshold', 1);
  setIfZero(probe, 'failureThreshold', 3);
  editObject(probe, 'httpGet', defaultHTTPGetAction);
  editObject(probe, 'grpc', (grpc) => setIfNil(grpc, 'service', ''));
}

/** A fieldRef and a resourceFieldRef: of an env var's valueFrom, or of a downwardAPI item. */
function defaultFieldRefs(d: Draft): void {
  editObject(d, 'fieldRef', defaultObjectFieldSelector);
  editObject(d, 'resourceFieldRef', defaultResourceFieldSelector);
}

function defaultResourceRequirements(resources: Draft): void {
  editObject(resources, 'limits', roundedUp);
  editObject(resources, 'requests', roundedUp);
}

function defaultContainer(c: Draft): void {
  // SetDefaults_Container
  const pullPolicy = c.get('imagePullPolicy');
  if (pullPolicy === undefined || pullPolicy === null || pullPolicy === '') {
    const image = c.get('image');
    c.set('imagePullPolicy', defaultImagePullPolicy(typeof image === 'string' ? image : ''));
  }
  setIfZero(c, 'terminationMessagePath', '/dev/termination-log');
  setIfZero(c, 'terminationMessagePolicy', 'File');
  editEach(c, 'ports', (port) => setIfZero(port, 'protocol', 'TCP'));
  editEach(c, 'env', (env) => editObject(env, 'valueFrom', defaultFieldRefs));
  // Container.resources is a non-pointer struct: always serialized, `{}` when empty.
  editEnsured(c, 'resources', defaultResourceRequirements);
  editObject(c, 'livenessProbe', defaultProbe);
  editObject(c, 'readinessProbe', defaultProbe);
  editObject(c, 'startupProbe', defaultProbe);
  editObject(c, 'lifecycle', (lifecycle) => {
    for (const hook of ['postStart', 'preStop'])
      editObject(lifecycle, hook, (handler) => editObject(handler, 'httpGet', defaultHTTPGetAction));
  });
}

/** Container lists of a pod spec, each defaulted by defaultContainer. */
const CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;

/**
 * A lower bound, in bytes of JSON, of the defaulting patch `defaultingPatch` would return: the `add` operations
 * that defaultContainer is certain to produce (imagePullPolicy, terminationMessagePath, terminationMessagePolicy
 * and resources of containers that lack them), counted without copying or defaulting anything. The admission
 * handler refuses an object whose bound is already over the patch limit before it pays for the copy, the
 * defaulting and the comparison (for 100k trivial containers they need several times the object's size in heap).
 * Stops counting once `limit` is passed. A field that is present but zero turns into a longer `replace`, so
 * counting it as `add` keeps this a lower bound.
 */
export function templatePatchLowerBound(obj: JsonObject, oldObj: JsonObject | undefined, limit: number): number {
  const spec = objectAt(obj, 'spec');
  const template = spec ? objectAt(spec, 'template') : undefined;
  const podSpec = template ? objectAt(template, 'spec') : undefined;
  if (!podSpec) return 0;
  const oldSpec = oldObj ? objectAt(oldObj, 'spec') : undefined;
  // An unchanged template is not defaulted (defaultDaemonSet).
  if (oldObj && jsonEqual(template, oldSpec?.template)) return 0;
  // {"op":"add","path":"<path>","value":<value>} plus the comma between operations.
  const OP_OVERHEAD = '{"op":"add","path":"","value":}'.length + 1;
  let size = 2;
  for (const list of CONTAINER_LISTS) {
    const containers = podSpec[list];
    if (!Array.isArray(containers)) continue;
    for (let i = 0; i < containers.length; i++) {
      const c: unknown = containers[i];
      if (!isObject(c)) continue;
      const prefix = `/spec/template/spec/${list}/${i}/`.length;
      const zero = (k: string) => c[k] === undefined || c[k] === null || c[k] === '' || c[k] === 0;
      if (zero('imagePullPolicy')) size += OP_OVERHEAD + prefix + 'imagePullPolicy'.length + '"Always"'.length; // the shorter of the two
      if (zero('terminationMessagePath'))
        size += OP_OVERHEAD + prefix + 'terminationMessagePath'.length + '"/dev/termination-log"'.length;
      if (zero('terminationMessagePolicy'))
        size += OP_OVERHEAD + prefix + 'terminationMessagePolicy'.length + '"File"'.length;
      if (c.resources === undefined || c.resources === null) size += OP_OVERHEAD + prefix + 'resources'.length + 2;
      if (size > limit) return size;
    }
  }
  return size;
}

/** Keys of core/v1 VolumeSource: a volume with none of them becomes an emptyDir. */
export const VOLUME_SOURCES = [
  'hostPath', 'emptyDir', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'secret', 'nfs', 'iscsi',
  'glusterfs', 'persistentVolumeClaim', 'rbd', 'flexVolume', 'cinder', 'cephfs', 'flocker', 'downwardAPI', 'fc',
  'azureFile', 'configMap', 'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'projected',
  'portworxVolume', 'scaleIO', 'storageos', 'csi', 'ephemeral', 'image',
]; // prettier-ignore

export const DEFAULT_MODE = 0o644; // 420: secret, configMap, downwardAPI, projected

function defaultDownwardAPIItems(source: Draft): void {
  editEach(source, 'items', defaultFieldRefs);
}

function defaultVolume(v: Draft): void {
  if (!VOLUME_SOURCES.some((k) => v.get(k) !== undefined && v.get(k) !== null)) v.set('emptyDir', {});
  editObject(v, 'hostPath', (hostPath) => setIfNil(hostPath, 'type', ''));
  editObject(v, 'emptyDir', (emptyDir) => canonicalQuantityField(emptyDir, 'sizeLimit'));
  editObject(v, 'secret', (secret) => setIfNil(secret, 'defaultMode', DEFAULT_MODE));
  editObject(v, 'iscsi', (iscsi) => setIfZero(iscsi, 'iscsiInterface', 'default'));
  editObject(v, 'rbd', (rbd) => {
    setIfZero(rbd, 'pool', 'rbd');
    setIfZero(rbd, 'user', 'admin');
    setIfZero(rbd, 'keyring', '/etc/ceph/keyring');
  });
  editObject(v, 'downwardAPI', (downwardAPI) => {
    setIfNil(downwardAPI, 'defaultMode', DEFAULT_MODE);
    defaultDownwardAPIItems(downwardAPI);
  });
  editObject(v, 'configMap', (configMap) => setIfNil(configMap, 'defaultMode', DEFAULT_MODE));
  editObject(v, 'azureDisk', (azureDisk) => {
    setIfNil(azureDisk, 'cachingMode', 'ReadWrite');
    setIfNil(azureDisk, 'kind', 'Shared');
    setIfNil(azureDisk, 'fsType', 'ext4');
    setIfNil(azureDisk, 'readOnly', false);
  });
  editObject(v, 'projected', (projected) => {
    setIfNil(projected, 'defaultMode', DEFAULT_MODE);
    editEach(projected, 'sources', (source) => {
      editObject(source, 'downwardAPI', defaultDownwardAPIItems);
      editObject(source, 'serviceAccountToken', (token) => setIfNil(token, 'expirationSeconds', 3600));
    });
  });
  editObject(v, 'scaleIO', (scaleIO) => {
    setIfZero(scaleIO, 'storageMode', 'ThinProvisioned');
    setIfZero(scaleIO, 'fsType', 'xfs');
  });
  editObject(v, 'ephemeral', (ephemeral) =>
    editObject(ephemeral, 'volumeClaimTemplate', (claimTemplate) => {
      // Its ObjectMeta is a non-pointer struct: typed serialization writes `metadata: {}`.
      editEnsured(claimTemplate, 'metadata', () => {});
      editObject(claimTemplate, 'spec', (claimSpec) => {
        setIfNil(claimSpec, 'volumeMode', 'Filesystem');
        editEnsured(claimSpec, 'resources', defaultResourceRequirements);
      });
    }),
  );
  editObject(v, 'image', (image) => {
    const pullPolicy = image.get('pullPolicy');
    if (pullPolicy !== undefined && pullPolicy !== null && pullPolicy !== '') return;
    // SetDefaults_Volume (ImageVolume feature): the same rule as containers.
    const reference = image.get('reference');
    image.set('pullPolicy', defaultImagePullPolicy(typeof reference === 'string' ? reference : ''));
  });
}

/** SetObjectDefaults_DaemonSet's template part, on `template` (mutated in place). */
export function setDefaultsPodTemplate(template: JsonObject): void {
  writeBack(template, defaultedPodTemplate(template));
}

/** The same as setDefaultsPodTemplate, but on a copy: `template` is not modified; what defaulting leaves is shared. */
export function defaultedPodTemplate(template: JsonObject): JsonObject {
  const draft = new Draft(template);
  defaultPodTemplate(draft);
  return draft.out;
}

function defaultPodTemplate(template: Draft): void {
  editEnsured(template, 'spec', defaultPodSpec);
}

function defaultPodSpec(spec: Draft): void {
  // The v1 <-> internal conversion: serviceAccount is the deprecated alias of serviceAccountName (the new
  // field wins), and the stored v1 object always carries both.
  const accountName = spec.get('serviceAccountName');
  const account = spec.get('serviceAccount');
  if (accountName === undefined || accountName === null || accountName === '')
    if (typeof account === 'string' && account !== '') spec.set('serviceAccountName', account);
  const name = spec.get('serviceAccountName');
  if (typeof name === 'string' && name !== '') spec.set('serviceAccount', name);
  // SetDefaults_PodSpec
  setIfZero(spec, 'dnsPolicy', 'ClusterFirst');
  setIfZero(spec, 'restartPolicy', 'Always');
  setIfNil(spec, 'securityContext', {});
  setIfNil(spec, 'terminationGracePeriodSeconds', 30);
  setIfZero(spec, 'schedulerName', 'default-scheduler');
  editEach(spec, 'volumes', defaultVolume);
  for (const list of CONTAINER_LISTS) editEach(spec, list, defaultContainer);
  editObject(spec, 'overhead', roundedUp);
  editObject(spec, 'resources', (resources) => {
    editObject(resources, 'limits', asWritten);
    editObject(resources, 'requests', asWritten);
  });
}

// ---------------------------------------------------------------------------------------------------------
// The whole object

/** Order-insensitive deep equality of JSON values. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/**
 * The defaulted copy of a DaemonSet of `version` (the input is not modified; metadata and status are shared with it,
 * spec is a copy of its own). The template is defaulted only when it is new (no old object) or differs from the old
 * object's template, so stored templates, and with them the revision hash, never change behind the user's back.
 * `oldObj` is in the same version (the apiserver sends both in the version the webhook is called for).
 */
export function defaultDaemonSet(obj: JsonObject, oldObj?: JsonObject, version: ServedVersion = VERSION): JsonObject {
  const out = defaultedDaemonSet(obj, oldObj, version);
  return out.spec === undefined ? { ...out } : { ...out, spec: cloneJson(out.spec) };
}

/** defaultDaemonSet sharing with the input whatever defaulting leaves (the input itself when nothing). */
function defaultedDaemonSet(obj: JsonObject, oldObj: JsonObject | undefined, version: ServedVersion): JsonObject {
  const draft = new Draft(obj);
  editEnsured(draft, 'spec', (spec) => {
    defaultDaemonSetSpec(spec, version);
    const template = spec.get('template');
    const oldSpec = oldObj ? objectAt(oldObj, 'spec') : undefined;
    const oldTemplate = oldSpec ? oldSpec.template : undefined;
    if (isObject(template) && (!oldObj || !jsonEqual(template, oldTemplate)))
      editObject(spec, 'template', defaultPodTemplate);
  });
  return draft.out;
}

/**
 * JSON patch (RFC 6902) from the raw object to its defaulted form, with paths into the object as sent in
 * `version`; empty when nothing changed. The comparison walks only the copied objects: the rest is the input's own.
 */
export function defaultingPatch(obj: JsonObject, oldObj?: JsonObject, version: ServedVersion = VERSION): Operation[] {
  return fastJsonPatch.compare(obj, defaultedDaemonSet(obj, oldObj, version));
}
