// Walking and changing parsed JSON in place, for the tests that change objects at random (the webhook's fuzz
// test, the defaulting's reference test).
/* eslint-disable @typescript-eslint/no-explicit-any */
import { pick, type Rand } from './random.ts';

/** Every [parent, key] in the value (objects and arrays), iteratively. */
export function slots(root: unknown): [any, string | number][] {
  const out: [any, string | number][] = [];
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (Array.isArray(v))
      v.forEach((x, i) => {
        out.push([v, i]);
        stack.push(x);
      });
    else if (typeof v === 'object' && v !== null)
      for (const k of Object.keys(v)) {
        out.push([v, k]);
        stack.push((v as any)[k]);
      }
  }
  return out;
}

/** Sets parent[key] as JSON.parse would (an own property, even for `__proto__`). */
export function setOwn(parent: any, key: string | number, value: unknown): void {
  Object.defineProperty(parent, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * Calls `change` on one to `most` slots of `root` chosen by `r`, each chosen after the change before it (so a slot
 * removed is not chosen again); stops early when nothing is left.
 */
export function changeRandomSlots(
  r: Rand,
  root: unknown,
  most: number,
  change: (parent: any, key: string | number) => void,
): void {
  const count = 1 + Math.floor(r() * most);
  for (let n = 0; n < count; n++) {
    const all = slots(root);
    if (all.length === 0) return;
    const [parent, key] = pick(r, all);
    change(parent, key);
  }
}
