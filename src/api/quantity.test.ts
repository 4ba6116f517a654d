import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatQuantity,
  parseQuantity,
  QUANTITY_FORMAT_ERROR,
  QUANTITY_SUFFIX_ERROR,
  quantityFromJSON,
  roundUpToMilli,
  type Quantity,
} from './quantity.ts';

const read = (v: unknown): Quantity => {
  const q = quantityFromJSON(v);
  assert.notEqual(typeof q, 'string', `${String(v)} did not parse: ${String(q)}`);
  return q as Quantity;
};

describe('quantityFromJSON', () => {
  // The canonical text the apiserver writes back, as resource.Quantity's String() (and RoundUp(-3) for requests).
  const cases: { json: unknown; text: string; milli: string }[] = [
    { json: '10m', text: '10m', milli: '10m' },
    { json: ' 20Mi ', text: '20Mi', milli: '20Mi' },
    { json: '1024Mi', text: '1Gi', milli: '1Gi' },
    { json: '0.5', text: '500m', milli: '500m' },
    { json: '1500u', text: '1500u', milli: '2m' },
    { json: 2, text: '2', milli: '2' },
    { json: '1e3', text: '1e3', milli: '1e3' },
  ];
  for (const c of cases)
    it(`${JSON.stringify(c.json)} → ${c.text}, ${c.milli} rounded up to milli`, () => {
      assert.equal(formatQuantity(read(c.json)), c.text);
      assert.equal(formatQuantity(roundUpToMilli(read(c.json))), c.milli);
    });

  it('refuses what the typed decoder refuses, with its message', () => {
    assert.equal(quantityFromJSON({ cpu: 1 }), QUANTITY_FORMAT_ERROR);
    assert.equal(quantityFromJSON(Number.NaN), QUANTITY_FORMAT_ERROR);
    assert.equal(quantityFromJSON('12mm'), QUANTITY_SUFFIX_ERROR);
    assert.equal(quantityFromJSON('12mm'), QUANTITY_SUFFIX_ERROR, 'the same message when read again');
  });

  it('reads a text once: the same object again, equal to a fresh parse', () => {
    const first = read('250m');
    assert.equal(read('250m'), first);
    assert.equal(read(' 250m'), first, 'the trimmed text is the key');
    assert.deepEqual(first, parseQuantity('250m'));
  });

  it('stays bounded and right past its size, and keeps no long text', () => {
    const first = read('7Ki');
    // More distinct texts than the memo holds: it is cleared on the way, each still read right.
    for (let i = 1; i <= 3000; i++)
      assert.equal(formatQuantity(read(`${i}m`)), i % 1000 === 0 ? `${i / 1000}` : `${i}m`);
    const again = read('7Ki');
    assert.notEqual(again, first, 'cleared since, so parsed anew');
    assert.deepEqual(again, first);
    const long = `5.${'0'.repeat(31)}`;
    assert.notEqual(read(long), read(long), 'a text over 32 characters is parsed each time');
    assert.equal(formatQuantity(read(long)), '5');
  });
});
