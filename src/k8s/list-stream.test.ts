import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { JsonLinesDecoder, ListDecodeError, ListItemDecoder } from './list-stream.ts';

/** Hands `body` to `write` in the chunks that `cuts` (byte offsets, any order) make. */
function feed(body: Buffer, cuts: number[], write: (chunk: Buffer) => void): void {
  let from = 0;
  for (const cut of [...cuts, body.length].sort((a, b) => a - b)) {
    write(body.subarray(from, cut));
    from = cut;
  }
}

/** Decodes `body` fed in the chunks that `cuts` (byte offsets) make. */
function decode(body: Buffer, cuts: number[] = []): { rest: Record<string, unknown>; items: unknown[] } {
  const items: unknown[] = [];
  const d = new ListItemDecoder((item) => items.push(item));
  feed(body, cuts, (chunk) => d.write(chunk));
  const rest = d.end();
  assert.equal(d.count, items.length);
  return { rest, items };
}

/** The list as JSON.parse sees it, split into the same two parts. */
function expected(text: string): { rest: Record<string, unknown>; items: unknown[] } {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  const items = (parsed.items as unknown[] | undefined) ?? [];
  return { rest: { ...parsed, ...('items' in parsed ? { items: [] } : {}) }, items };
}

const NODE_LIST = JSON.stringify({
  kind: 'NodeList',
  apiVersion: 'v1',
  metadata: { resourceVersion: '218', continue: 'eyJ2Ijo' },
  items: [
    {
      metadata: {
        name: 'kwok-node-000',
        labels: { 'kubernetes.io/hostname': 'kwok-node-000' },
        managedFields: [{ manager: 'kwok', fieldsV1: { 'f:status': { 'k:{"type":"Ready"}': { '.': {} } } } }],
      },
      spec: { taints: [{ key: 'a', effect: 'NoSchedule' }] },
      status: { conditions: [{ type: 'Ready', status: 'True', message: 'kubelet is "posting" ready \\ status' }] },
    },
    { metadata: { name: 'kwok-node-001', annotations: { note: 'ünïcödé ✓ 🚀, [not] {structure}' } }, items: [1] },
  ],
});

describe('ListItemDecoder', () => {
  const rows: { name: string; text: string }[] = [
    { name: 'a node list with escapes, quotes in keys and unicode', text: NODE_LIST },
    {
      name: 'items before metadata',
      text: '{"items":[{"a":1},{"b":[2,{"c":"]"}]}],"metadata":{"resourceVersion":"5"}}',
    },
    {
      name: 'an empty list',
      text: '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}',
    },
    { name: 'no items key', text: '{"kind":"Status","status":"Success"}' },
    {
      name: 'a key named items below the top level is not split',
      text: '{"metadata":{"items":[{"x":1}]},"items":[{"y":2}]}',
    },
    {
      name: 'pretty-printed',
      text: JSON.stringify(JSON.parse(NODE_LIST), null, 2).replaceAll('\n', '\r\n'),
    },
    { name: 'backslashes before a quote', text: '{"items":[{"p":"a\\\\"},{"q":"\\\\\\"x"},{"r":"\\\\\\\\"}]}' },
  ];
  for (const { name, text } of rows) {
    test(`${name}: whole, and in chunks of every size from 1 byte`, () => {
      const body = Buffer.from(text);
      assert.deepEqual(decode(body), expected(text));
      for (const size of [1, 2, 3, 7, 64]) {
        const cuts: number[] = [];
        for (let at = size; at < body.length; at += size) cuts.push(at);
        assert.deepEqual(decode(body, cuts), expected(text), `chunks of ${size} bytes`);
      }
    });
  }

  test('each item is handed over as soon as its last byte arrived', () => {
    const seen: unknown[] = [];
    const d = new ListItemDecoder((item) => seen.push(item));
    const text = '{"metadata":{},"items":[{"n":1},{"n":2}]}';
    const second = text.indexOf('{"n":2}');
    d.write(Buffer.from(text.slice(0, second - 1)));
    assert.deepEqual(seen, [{ n: 1 }]);
    d.write(Buffer.from(text.slice(second - 1, second + 6)));
    assert.deepEqual(seen, [{ n: 1 }]);
    d.write(Buffer.from(text.slice(second + 6)));
    assert.deepEqual(seen, [{ n: 1 }, { n: 2 }]);
    assert.deepEqual(d.end(), { metadata: {}, items: [] });
  });

  const broken: { name: string; text: string }[] = [
    { name: 'a body cut inside an item', text: '{"items":[{"a":"b"' },
    { name: 'a body cut inside a string', text: '{"items":[],"kind":"Li' },
    { name: 'an item that is not an object', text: '{"items":[1]}' },
    { name: 'an item that is a string', text: '{"items":["x"]}' },
    { name: 'an item that is not JSON', text: '{"items":[{"a":tru}]}' },
    { name: 'unbalanced', text: '{"items":[]}}' },
  ];
  for (const { name, text } of broken) {
    test(`refuses ${name}`, () => {
      assert.throws(() => decode(Buffer.from(text)), ListDecodeError);
    });
  }

  test('any list in any chunks decodes as JSON.parse does', () => {
    const value = fc.jsonValue({ maxDepth: 3 });
    const item = fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }), value, { maxKeys: 4 });
    const list = fc.record({
      kind: fc.string({ unit: 'binary', maxLength: 8 }),
      metadata: fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 3 }),
      items: fc.array(item, { maxLength: 6 }),
    });
    fc.assert(
      fc.property(list, fc.array(fc.nat(), { maxLength: 8 }), (l, rawCuts) => {
        const body = Buffer.from(JSON.stringify(l));
        const cuts = rawCuts.map((c) => c % (body.length + 1));
        // JSON.parse(JSON.stringify(x)) is the reference: -0 becomes 0, and so on.
        assert.deepEqual(decode(body, cuts), expected(body.toString('utf8')));
      }),
      { numRuns: 200 },
    );
  });
});

/** The values of a watch body fed in the chunks that `cuts` (byte offsets) make; `stopAfter` values at most. */
function decodeLines(body: Buffer, cuts: number[] = [], stopAfter = Infinity): unknown[] {
  const values: unknown[] = [];
  const d = new JsonLinesDecoder();
  feed(body, cuts, (chunk) =>
    d.write(chunk, (v) => {
      values.push(v);
      return values.length < stopAfter;
    }),
  );
  return values;
}

describe('JsonLinesDecoder', () => {
  const events = [
    { type: 'ADDED', object: { metadata: { name: 'pod-ä', labels: { app: '日本' } } } },
    { type: 'MODIFIED', object: { metadata: { name: 'pod-b', annotations: { note: 'a\nb "c" \\ 😀' } } } },
    { type: 'BOOKMARK', object: { metadata: { resourceVersion: '12' } } },
  ];
  const body = Buffer.from(events.map((e) => JSON.stringify(e)).join('\n') + '\n');

  test('every event, whatever byte the chunks are cut at (inside a multi-byte character too)', () => {
    assert.deepEqual(decodeLines(body), events);
    for (let cut = 0; cut <= body.length; cut++) assert.deepEqual(decodeLines(body, [cut]), events, `cut at ${cut}`);
    const everyByte = Array.from({ length: body.length }, (_, i) => i);
    assert.deepEqual(decodeLines(body, everyByte), events);
  });

  test('blank lines and CRLF are skipped; a line not ended waits for its newline', () => {
    const text = `\n  \r\n${JSON.stringify(events[0])}\r\n\n${JSON.stringify(events[1])}\n${JSON.stringify(events[2])}`;
    assert.deepEqual(decodeLines(Buffer.from(text)), events.slice(0, 2));
    assert.deepEqual(decodeLines(Buffer.from(text + '\n'), [3, 40]), events);
  });

  test('a line that is not JSON throws; returning false stops before the next line is parsed', () => {
    assert.throws(() => decodeLines(Buffer.from('{"type":"ADDED"}\n{"type":\n')), SyntaxError);
    // The second line would throw: the decoder never gets to it.
    assert.deepEqual(decodeLines(Buffer.from('{"type":"ADDED"}\n{"type":\n'), [], 1), [{ type: 'ADDED' }]);
  });

  test('any events in any chunks decode as JSON.parse of each line does', () => {
    const value = fc.jsonValue({ maxDepth: 3 });
    fc.assert(
      fc.property(fc.array(value, { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), (values, rawCuts) => {
        const text = values.map((v) => JSON.stringify(v) + '\n').join('');
        const body = Buffer.from(text);
        const cuts = rawCuts.map((c) => c % (body.length + 1));
        assert.deepEqual(
          decodeLines(body, cuts),
          text
            .split('\n')
            .filter((l) => l.trim() !== '')
            .map((l) => JSON.parse(l) as unknown),
        );
      }),
      { numRuns: 200 },
    );
  });
});
