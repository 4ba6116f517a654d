// JSON values as they come from the apiserver or an AdmissionReview body.

/**
 * A deep copy of a JSON value (objects, arrays, strings, numbers, booleans, null). Several times faster than
 * structuredClone, which goes through the serializer for any value: the webhook clones a DaemonSet per request
 * and the planner a pod spec per create. Undefined properties are copied as undefined (JSON has none).
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJson(value[i] as unknown);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (Object.hasOwn(value, key)) out[key] = cloneJson((value as Record<string, unknown>)[key]);
  }
  return out as T;
}
