// Defaulting of advanced-daemonset.io DaemonSetSetting, as a pure function over plain JSON (defaults.ts does the same
// for the DaemonSet): spec.reference names a DaemonSet of apps.kruise.io/v1beta1 unless it says otherwise, as
// ExtendedDaemonsetSetting's reference names its ExtendedDaemonSet. Only a reference that is there is defaulted: a
// missing one is the validating webhook's (and the CRD schema's) to refuse, naming spec.reference rather than its
// name. A field of the wrong type is left alone for validation to report.
import fastJsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import { isObject, type JsonObject } from './defaults.ts';
import { DEFAULT_SETTING_REFERENCE_API_VERSION, SETTING_REFERENCE_KIND } from './setting.ts';

/** Go value fields (a string): default when absent, null or empty. */
const unset = (v: unknown) => v === undefined || v === null || v === '';

/** spec.reference's defaults, on `reference` (mutated in place); anything but an object is left alone. */
export function setDefaultsSettingReference(reference: unknown): void {
  if (!isObject(reference)) return;
  if (unset(reference.kind)) reference.kind = SETTING_REFERENCE_KIND;
  if (unset(reference.apiVersion)) reference.apiVersion = DEFAULT_SETTING_REFERENCE_API_VERSION;
}

/** The defaulted copy of a DaemonSetSetting (the input is not modified; only spec.reference is copied). */
export function defaultDaemonSetSetting(obj: JsonObject): JsonObject {
  const spec = obj.spec;
  if (!isObject(spec) || !isObject(spec.reference)) return obj;
  const reference = { ...spec.reference };
  setDefaultsSettingReference(reference);
  return { ...obj, spec: { ...spec, reference } };
}

/** JSON patch (RFC 6902) from the object as sent to its defaulted form; empty when nothing changed. */
export function settingDefaultingPatch(obj: JsonObject): Operation[] {
  return fastJsonPatch.compare(obj, defaultDaemonSetSetting(obj));
}
