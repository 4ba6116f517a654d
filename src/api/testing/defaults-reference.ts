// The defaulting of src/api/defaults.ts as it was written first, kept for the tests only: it defaults a deep copy in
// place and diffs it with fast-json-patch's compare. src/api/defaults.ts now defaults copy-on-write (only the
// objects on the way to a default are copied); the tests check both give the same object and the same patch.
// The rules themselves are documented there.
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
} from '../constants.ts';
import { DEFAULT_MODE, isObject, jsonEqual, VOLUME_SOURCES, type JsonObject } from '../defaults.ts';
import { defaultImagePullPolicy } from '../image.ts';
import { cloneJson } from '../../k8s/json.ts';
import { toleratesTaint } from '../../k8s/scheduling.ts';
import type { Taint, Toleration } from '../../k8s/types.ts';
import { formatQuantity, quantityFromJSON, roundUpToMilli } from '../quantity.ts';

/** The object at obj[key], created as {} when absent/null; undefined when a non-object is there. */
function ensureObject(obj: JsonObject, key: string): JsonObject | undefined {
  const v = obj[key];
  if (v === undefined || v === null) {
    const created: JsonObject = {};
    obj[key] = created;
    return created;
  }
  return isObject(v) ? v : undefined;
}

const objectAt = (obj: JsonObject, key: string): JsonObject | undefined => {
  const v = obj[key];
  return isObject(v) ? v : undefined;
};

const objectsIn = (obj: JsonObject, key: string): JsonObject[] => {
  const v = obj[key];
  return Array.isArray(v) ? v.filter(isObject) : [];
};

/** Go pointer fields: default when absent or null. */
function setIfNil(obj: JsonObject, key: string, value: unknown): void {
  if (obj[key] === undefined || obj[key] === null) obj[key] = value;
}

/** Go value fields (string, int): default when absent, null or the zero value. */
function setIfZero(obj: JsonObject, key: string, value: unknown): void {
  const v = obj[key];
  if (v === undefined || v === null || v === '' || v === 0) obj[key] = value;
}

// ---------------------------------------------------------------------------------------------------------
// Kruise SetDefaultsDaemonSet

/**
 * `rollingUpdate.type` -> `rollingUpdateType`. Not Kruise (docs/differences.md#rollingupdatetype-alias): articles
 * about Advanced DaemonSet write `type: Surging` inside rollingUpdate, which Kruise's own CRD refuses as an unknown
 * field. We accept it as an alias so such a manifest works as its author meant; when both are set and differ,
 * `type` stays for the validating webhook to refuse.
 */
function moveRollingUpdateTypeAlias(ru: unknown): void {
  if (!isObject(ru) || ru.type === undefined) return;
  const unset = ru.rollingUpdateType === undefined || ru.rollingUpdateType === null || ru.rollingUpdateType === '';
  if (unset) ru.rollingUpdateType = ru.type;
  if (unset || ru.rollingUpdateType === ru.type) delete ru.type;
}

/**
 * rollingUpdate.canary, as ExtendedDaemonSet defaults its canary
 * (https://github.com/DataDog/extendeddaemonset/blob/main/api/v1alpha1/extendeddaemonset_default.go): nodes 1,
 * validation Auto, and in Auto mode only duration 10m and noRestartsDuration 5m; autoPause and autoFail enabled
 * with maxRestarts 2 and 5. Not Kruise: it has no canary.
 */
function defaultCanary(canary: unknown): void {
  if (!isObject(canary)) return;
  setIfNil(canary, 'nodes', DEFAULT_CANARY_NODES);
  setIfZero(canary, 'validation', DEFAULT_CANARY_VALIDATION);
  if (canary.validation === 'Auto') {
    setIfZero(canary, 'duration', DEFAULT_CANARY_DURATION);
    setIfZero(canary, 'noRestartsDuration', DEFAULT_CANARY_NO_RESTARTS_DURATION);
  }
  const autoPause = ensureObject(canary, 'autoPause');
  if (autoPause) {
    setIfNil(autoPause, 'enabled', true);
    setIfNil(autoPause, 'maxRestarts', DEFAULT_CANARY_AUTO_PAUSE_MAX_RESTARTS);
  }
  const autoFail = ensureObject(canary, 'autoFail');
  if (autoFail) {
    setIfNil(autoFail, 'enabled', true);
    setIfNil(autoFail, 'maxRestarts', DEFAULT_CANARY_AUTO_FAIL_MAX_RESTARTS);
  }
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
  const v1alpha1 = version === VERSION;
  const spec = ensureObject(ds, 'spec');
  if (!spec) return;
  setIfNil(spec, 'burstReplicas', DEFAULT_BURST_REPLICAS);
  const strategy = ensureObject(spec, 'updateStrategy');
  if (strategy) {
    setIfZero(strategy, 'type', 'RollingUpdate');
    if (v1alpha1) moveRollingUpdateTypeAlias(strategy.rollingUpdate);
    if (strategy.type === 'RollingUpdate') {
      const ru = ensureObject(strategy, 'rollingUpdate');
      if (ru) {
        const surging = v1alpha1 && ru.rollingUpdateType === 'Surging';
        if (surging) {
          setIfNil(ru, 'maxSurge', 1);
          setIfNil(ru, 'maxUnavailable', 0);
        }
        if (
          ru.rollingUpdateType === undefined ||
          ru.rollingUpdateType === null ||
          ru.rollingUpdateType === '' ||
          surging
        )
          ru.rollingUpdateType = 'Standard';
        const unset = (k: string) => ru[k] === undefined || ru[k] === null;
        if (unset('maxUnavailable') && unset('maxSurge')) {
          ru.maxUnavailable = 1;
          ru.maxSurge = 0;
        }
        setIfZero(ru, 'unhealthyNodes', DEFAULT_UNHEALTHY_NODES);
        defaultCanary(ru.canary);
        // Not Kruise (no waves there): the next wave may start as soon as the last one is available.
        const waves = objectAt(ru, 'waves');
        if (waves) setIfNil(waves, 'availableSeconds', 0);
      }
    }
  }
  setIfNil(spec, 'revisionHistoryLimit', DEFAULT_REVISION_HISTORY_LIMIT);
  defaultNodeReadiness(spec);
  // Not where minReadySeconds reaches the default: it must be above minReadySeconds, and a manifest Kruise accepts
  // is not refused for a field its author never wrote (such a DaemonSet has no deadline unless it sets one).
  const minReady = typeof spec.minReadySeconds === 'number' ? spec.minReadySeconds : 0;
  if (minReady < DEFAULT_PROGRESS_DEADLINE_SECONDS)
    setIfNil(spec, 'progressDeadlineSeconds', DEFAULT_PROGRESS_DEADLINE_SECONDS);
}

/**
 * spec.nodeReadiness: mode Bootstrap, effect NoSchedule, unreadySeconds 30 under Continuous; and a toleration of the
 * taint in the pod template (operator Exists, the taint's effect), unless one tolerates it already, so the DaemonSet's
 * pod schedules on the node its taint keeps other workloads off.
 */
function defaultNodeReadiness(spec: JsonObject): void {
  const readiness = spec.nodeReadiness;
  if (!isObject(readiness)) return;
  setIfZero(readiness, 'mode', 'Bootstrap');
  if (readiness.mode === 'Continuous') setIfNil(readiness, 'unreadySeconds', DEFAULT_NODE_READINESS_UNREADY_SECONDS);
  const taint = readiness.taint;
  if (!isObject(taint) || typeof taint.key !== 'string' || taint.key === '') return;
  setIfZero(taint, 'effect', 'NoSchedule');
  const template = ensureObject(spec, 'template');
  const podSpec = template && ensureObject(template, 'spec');
  if (!podSpec) return;
  const tolerations = Array.isArray(podSpec.tolerations) ? podSpec.tolerations : [];
  const tolerated = tolerations.some((t) => isObject(t) && toleratesTaint(t as Toleration, taint as unknown as Taint));
  if (!tolerated) podSpec.tolerations = [...tolerations, { key: taint.key, operator: 'Exists', effect: taint.effect }];
}

// ---------------------------------------------------------------------------------------------------------
// apps/v1 pod template defaults

/** A ResourceList: quantities in canonical form; `roundUp` applies SetDefaults_ResourceList (milli). */
function defaultResourceList(list: unknown, roundUp: boolean): void {
  if (!isObject(list)) return;
  for (const [name, raw] of Object.entries(list)) {
    // Left as written: `__proto__` is no resource name (validation refuses it), and a patch through a
    // `__proto__` path is refused by JSON-patch libraries in JavaScript.
    if (name === '__proto__') continue;
    const q = quantityFromJSON(raw);
    if (typeof q === 'string') continue; // unparseable: left for validation to report
    list[name] = formatQuantity(roundUp ? roundUpToMilli(q) : q);
  }
}

function canonicalQuantityField(obj: JsonObject, key: string): void {
  if (obj[key] === undefined || obj[key] === null) return;
  const q = quantityFromJSON(obj[key]);
  if (typeof q !== 'string') obj[key] = formatQuantity(q);
}

function defaultObjectFieldSelector(ref: unknown): void {
  if (isObject(ref)) setIfZero(ref, 'apiVersion', 'v1');
}

/** ResourceFieldSelector.divisor is a non-pointer Quantity: typed serialization writes "0" when unset. */
function defaultResourceFieldSelector(ref: unknown): void {
  if (!isObject(ref)) return;
  setIfNil(ref, 'divisor', '0');
  canonicalQuantityField(ref, 'divisor');
}

function defaultHTTPGetAction(action: unknown): void {
  if (!isObject(action)) return;
  setIfZero(action, 'path', '/');
  setIfZero(action, 'scheme', 'HTTP');
}

function defaultProbe(probe: unknown): void {
  if (!isObject(probe)) return;
  setIfZero(probe, 'timeoutSeconds', 1);
  setIfZero(probe, 'periodSeconds', 10);
  setIfZero(probe, 'successThreshold', 1);
  setIfZero(probe, 'failureThreshold', 3);
  defaultHTTPGetAction(probe.httpGet);
  const grpc = objectAt(probe, 'grpc');
  if (grpc) setIfNil(grpc, 'service', '');
}

function defaultContainer(c: JsonObject): void {
  // SetDefaults_Container
  if (c.imagePullPolicy === undefined || c.imagePullPolicy === null || c.imagePullPolicy === '')
    c.imagePullPolicy = defaultImagePullPolicy(typeof c.image === 'string' ? c.image : '');
  setIfZero(c, 'terminationMessagePath', '/dev/termination-log');
  setIfZero(c, 'terminationMessagePolicy', 'File');
  for (const port of objectsIn(c, 'ports')) setIfZero(port, 'protocol', 'TCP');
  for (const env of objectsIn(c, 'env')) {
    const from = objectAt(env, 'valueFrom');
    if (!from) continue;
    defaultObjectFieldSelector(from.fieldRef);
    defaultResourceFieldSelector(from.resourceFieldRef);
  }
  // Container.resources is a non-pointer struct: always serialized, `{}` when empty.
  const resources = ensureObject(c, 'resources');
  if (resources) {
    defaultResourceList(resources.limits, true);
    defaultResourceList(resources.requests, true);
  }
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
  const lifecycle = objectAt(c, 'lifecycle');
  if (lifecycle) {
    for (const hook of ['postStart', 'preStop']) {
      const handler = objectAt(lifecycle, hook);
      if (handler) defaultHTTPGetAction(handler.httpGet);
    }
  }
}

function defaultDownwardAPIItems(source: JsonObject): void {
  for (const item of objectsIn(source, 'items')) {
    defaultObjectFieldSelector(item.fieldRef);
    defaultResourceFieldSelector(item.resourceFieldRef);
  }
}

function defaultVolume(v: JsonObject): void {
  if (!VOLUME_SOURCES.some((k) => v[k] !== undefined && v[k] !== null)) v.emptyDir = {};
  const hostPath = objectAt(v, 'hostPath');
  if (hostPath) setIfNil(hostPath, 'type', '');
  const emptyDir = objectAt(v, 'emptyDir');
  if (emptyDir) canonicalQuantityField(emptyDir, 'sizeLimit');
  const secret = objectAt(v, 'secret');
  if (secret) setIfNil(secret, 'defaultMode', DEFAULT_MODE);
  const iscsi = objectAt(v, 'iscsi');
  if (iscsi) setIfZero(iscsi, 'iscsiInterface', 'default');
  const rbd = objectAt(v, 'rbd');
  if (rbd) {
    setIfZero(rbd, 'pool', 'rbd');
    setIfZero(rbd, 'user', 'admin');
    setIfZero(rbd, 'keyring', '/etc/ceph/keyring');
  }
  const downwardAPI = objectAt(v, 'downwardAPI');
  if (downwardAPI) {
    setIfNil(downwardAPI, 'defaultMode', DEFAULT_MODE);
    defaultDownwardAPIItems(downwardAPI);
  }
  const configMap = objectAt(v, 'configMap');
  if (configMap) setIfNil(configMap, 'defaultMode', DEFAULT_MODE);
  const azureDisk = objectAt(v, 'azureDisk');
  if (azureDisk) {
    setIfNil(azureDisk, 'cachingMode', 'ReadWrite');
    setIfNil(azureDisk, 'kind', 'Shared');
    setIfNil(azureDisk, 'fsType', 'ext4');
    setIfNil(azureDisk, 'readOnly', false);
  }
  const projected = objectAt(v, 'projected');
  if (projected) {
    setIfNil(projected, 'defaultMode', DEFAULT_MODE);
    for (const source of objectsIn(projected, 'sources')) {
      const dapi = objectAt(source, 'downwardAPI');
      if (dapi) defaultDownwardAPIItems(dapi);
      const token = objectAt(source, 'serviceAccountToken');
      if (token) setIfNil(token, 'expirationSeconds', 3600);
    }
  }
  const scaleIO = objectAt(v, 'scaleIO');
  if (scaleIO) {
    setIfZero(scaleIO, 'storageMode', 'ThinProvisioned');
    setIfZero(scaleIO, 'fsType', 'xfs');
  }
  const claimTemplate = objectAt(objectAt(v, 'ephemeral') ?? {}, 'volumeClaimTemplate');
  // Its ObjectMeta is a non-pointer struct: typed serialization writes `metadata: {}`.
  if (claimTemplate) ensureObject(claimTemplate, 'metadata');
  const claimSpec = claimTemplate ? objectAt(claimTemplate, 'spec') : undefined;
  if (claimSpec) {
    setIfNil(claimSpec, 'volumeMode', 'Filesystem');
    const resources = ensureObject(claimSpec, 'resources');
    if (resources) {
      defaultResourceList(resources.limits, true);
      defaultResourceList(resources.requests, true);
    }
  }
  const image = objectAt(v, 'image');
  if (image && (image.pullPolicy === undefined || image.pullPolicy === null || image.pullPolicy === '')) {
    // SetDefaults_Volume (ImageVolume feature): the same rule as containers.
    image.pullPolicy = defaultImagePullPolicy(typeof image.reference === 'string' ? image.reference : '');
  }
}

/** SetObjectDefaults_DaemonSet's template part, on `template` (mutated in place). */
export function setDefaultsPodTemplate(template: JsonObject): void {
  const spec = ensureObject(template, 'spec');
  if (!spec) return;
  // The v1 <-> internal conversion: serviceAccount is the deprecated alias of serviceAccountName (the new
  // field wins), and the stored v1 object always carries both.
  if (spec.serviceAccountName === undefined || spec.serviceAccountName === null || spec.serviceAccountName === '')
    if (typeof spec.serviceAccount === 'string' && spec.serviceAccount !== '')
      spec.serviceAccountName = spec.serviceAccount;
  if (typeof spec.serviceAccountName === 'string' && spec.serviceAccountName !== '')
    spec.serviceAccount = spec.serviceAccountName;
  // SetDefaults_PodSpec
  setIfZero(spec, 'dnsPolicy', 'ClusterFirst');
  setIfZero(spec, 'restartPolicy', 'Always');
  setIfNil(spec, 'securityContext', {});
  setIfNil(spec, 'terminationGracePeriodSeconds', 30);
  setIfZero(spec, 'schedulerName', 'default-scheduler');
  for (const v of objectsIn(spec, 'volumes')) defaultVolume(v);
  for (const c of objectsIn(spec, 'initContainers')) defaultContainer(c);
  for (const c of objectsIn(spec, 'containers')) defaultContainer(c);
  for (const c of objectsIn(spec, 'ephemeralContainers')) defaultContainer(c);
  defaultResourceList(spec.overhead, true);
  const podResources = objectAt(spec, 'resources');
  if (podResources) {
    defaultResourceList(podResources.limits, false);
    defaultResourceList(podResources.requests, false);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The whole object

/**
 * The defaulted copy of a DaemonSet of `version` (the input is not modified). The template is defaulted only when
 * it is new (no old object) or differs from the old object's template, so stored templates, and with them the
 * revision hash, never change behind the user's back. `oldObj` is in the same version (the apiserver sends both
 * in the version the webhook is called for).
 */
export function defaultDaemonSet(obj: JsonObject, oldObj?: JsonObject, version: ServedVersion = VERSION): JsonObject {
  // Defaulting changes only spec: metadata and status are shared with the input, which also lets the patch's
  // comparison skip them (same references).
  const out: JsonObject = { ...obj, ...(obj.spec !== undefined ? { spec: cloneJson(obj.spec) } : {}) };
  setDefaultsDaemonSet(out, version);
  const spec = objectAt(out, 'spec');
  const template = spec ? objectAt(spec, 'template') : undefined;
  const oldSpec = oldObj ? objectAt(oldObj, 'spec') : undefined;
  const oldTemplate = oldSpec ? oldSpec.template : undefined;
  if (template && (!oldObj || !jsonEqual(template, oldTemplate))) setDefaultsPodTemplate(template);
  return out;
}

/**
 * JSON patch (RFC 6902) from the raw object to its defaulted form, with paths into the object as sent in
 * `version`; empty when nothing changed.
 */
export function defaultingPatch(obj: JsonObject, oldObj?: JsonObject, version: ServedVersion = VERSION): Operation[] {
  return fastJsonPatch.compare(obj, defaultDaemonSet(obj, oldObj, version));
}
