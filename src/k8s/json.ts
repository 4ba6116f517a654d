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
    if (!Object.hasOwn(value, key)) continue;
    const v = cloneJson((value as Record<string, unknown>)[key]);
    // JSON.parse makes `"__proto__"` an own data property; assigning it would call the prototype setter
    // instead (dropping the key and, for an object value, changing what every other key reads as inherited).
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: v, writable: true, enumerable: true, configurable: true });
    else out[key] = v;
  }
  return out as T;
}
