// Deterministic hashing for ControllerRevision names, the idea of k8s.io/kubernetes/pkg/controller ComputeHash:
// FNV-32a over a stable serialization, collisionCount mixed in, printed in decimal and mapped onto a
// vowel-free alphabet (k8s.io/apimachinery/pkg/util/rand SafeEncodeString). Go's serialization (a spew dump of the
// typed struct) cannot be reproduced byte for byte; ours is canonical JSON, so the same template gives the same
// hash in every process and after every restart.

/** JSON with object keys sorted at every level (undefined members dropped, as JSON.stringify does). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

/**
 * A copy with object keys sorted at every level. Values whose bytes the apiserver keeps verbatim and compares
 * (ControllerRevision.data) must be written this way: every Go client that round-trips the object (the garbage
 * collector's ownerReference patches) re-marshals them with sorted keys, and different bytes are "immutable".
 */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortKeys(v)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** 32-bit FNV-1a. */
export function fnv32a(data: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of data) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const SAFE_ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';

/** rand.SafeEncodeString: each byte mapped into an alphabet without vowels (no accidental words) nor 0/1/3. */
export function safeEncodeString(s: string): string {
  let out = '';
  for (const b of new TextEncoder().encode(s)) out += SAFE_ALPHANUMS[b % SAFE_ALPHANUMS.length];
  return out;
}

/**
 * ComputeHash: fnv32a(canonical JSON of `value`, then collisionCount as 8 little-endian bytes when set), decimal,
 * safe-encoded.
 */
export function computeHash(value: unknown, collisionCount?: number | null): string {
  const json = new TextEncoder().encode(canonicalJson(value));
  let bytes = json;
  if (collisionCount !== undefined && collisionCount !== null) {
    bytes = new Uint8Array(json.length + 8);
    bytes.set(json);
    new DataView(bytes.buffer).setUint32(json.length, collisionCount >>> 0, true);
  }
  return safeEncodeString(String(fnv32a(bytes)));
}
