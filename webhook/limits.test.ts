// jsonTextWithin: the patch text the mutating webhook sends, made a chunk of operations at a time and given up once
// past the limit.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonTextWithin } from './limits.ts';

const op = (i: number, value: unknown = `v${i}`) => ({ op: 'add', path: `/metadata/labels/k${i}`, value });

describe('jsonTextWithin', () => {
  const rows: { name: string; ops: unknown[]; limit: number; sent: boolean }[] = [
    { name: 'no operation', ops: [], limit: 2, sent: true },
    { name: 'a few operations, in one piece', ops: [op(1), op(2)], limit: 1024, sent: true },
    {
      name: 'more than one chunk (100 operations)',
      ops: Array.from({ length: 100 }, (_, i) => op(i)),
      limit: 1e6,
      sent: true,
    },
    { name: 'exactly at the limit', ops: [op(1)], limit: JSON.stringify([op(1)]).length, sent: true },
    { name: 'one byte over the limit', ops: [op(1)], limit: JSON.stringify([op(1)]).length - 1, sent: false },
    // 3 bytes of UTF-8 per character: within the limit in UTF-16 code units, not in bytes.
    { name: 'multi-byte text over the limit in bytes', ops: [op(1, '€'.repeat(100))], limit: 200, sent: false },
    { name: 'multi-byte text within it', ops: [op(1, '€'.repeat(100))], limit: 400, sent: true },
    {
      name: 'a huge patch: refused in the chunks before the limit',
      ops: Array.from({ length: 100_000 }, (_, i) => op(i)),
      limit: 1024 * 1024,
      sent: false,
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const text = jsonTextWithin(row.ops, row.limit);
      if (!row.sent) return assert.equal(text, undefined);
      assert.equal(text, JSON.stringify(row.ops), 'the text is JSON.stringify of the operations');
      assert.ok(Buffer.byteLength(text as string) <= row.limit);
    });
  }
});
