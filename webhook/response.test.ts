// The named admission responses: each carries its verdict, and complete() sets the uid and encodes the patch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allowed, complete, denied, errored, patched, type Response } from './response.ts';

const invalid = {
  metadata: {},
  status: 'Failure' as const,
  message: 'DaemonSet.apps.kruise.io "x" is invalid: spec.minReadySeconds: Invalid value: -1',
  reason: 'Invalid',
  code: 422,
};
const op = { op: 'add' as const, path: '/spec/revisionHistoryLimit', value: 10 };

const rows: { name: string; response: Response; verdict: string; completed: Record<string, unknown> }[] = [
  { name: 'allowed', response: allowed(), verdict: 'allowed', completed: { uid: 'u', allowed: true } },
  {
    name: 'patched: the patch encoded as base64 JSONPatch',
    response: patched([op]),
    verdict: 'patched',
    completed: { uid: 'u', allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify([op])).toString('base64') },
  },
  { name: 'patched with no operations is allowed', response: patched([]), verdict: 'allowed', completed: { uid: 'u', allowed: true } },
  { name: 'denied: the status as given', response: denied(invalid), verdict: 'denied', completed: { uid: 'u', allowed: false, status: invalid } },
  {
    name: 'errored 400: BadRequest',
    response: errored(400, 'bad'),
    verdict: 'errored',
    completed: { uid: 'u', allowed: false, status: { metadata: {}, status: 'Failure', code: 400, reason: 'BadRequest', message: 'bad' } },
  },
  {
    name: 'errored 413: RequestEntityTooLarge',
    response: errored(413, 'too big'),
    verdict: 'errored',
    completed: { uid: 'u', allowed: false, status: { metadata: {}, status: 'Failure', code: 413, reason: 'RequestEntityTooLarge', message: 'too big' } },
  },
  {
    name: 'errored with a code of no known reason: no reason',
    response: errored(418, 'odd'),
    verdict: 'errored',
    completed: { uid: 'u', allowed: false, status: { metadata: {}, status: 'Failure', code: 418, message: 'odd' } },
  },
]; // prettier-ignore

for (const r of rows)
  test(r.name, () => {
    assert.equal(r.response.verdict, r.verdict);
    assert.deepEqual(complete(r.response, 'u'), r.completed);
  });
