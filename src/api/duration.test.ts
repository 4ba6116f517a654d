// Go duration strings: rows after time.ParseDuration's tests
// (https://github.com/golang/go/blob/master/src/time/time_test.go, parseDurationTests).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { durationMs, formatDuration, parseDuration } from './duration.ts';

describe('parseDuration', () => {
  const rows: { in: string; ms: number }[] = [
    { in: '0', ms: 0 },
    { in: '5s', ms: 5000 },
    { in: '30s', ms: 30_000 },
    { in: '1478s', ms: 1_478_000 },
    { in: '-5s', ms: -5000 },
    { in: '+5s', ms: 5000 },
    { in: '-0', ms: -0 },
    { in: '5.0s', ms: 5000 },
    { in: '5.6s', ms: 5600 },
    { in: '5.s', ms: 5000 },
    { in: '.5s', ms: 500 },
    { in: '1.004s', ms: 1004 },
    { in: '10ms', ms: 10 },
    { in: '11us', ms: 0.011 },
    { in: '12µs', ms: 0.012 },
    { in: '13μs', ms: 0.013 },
    { in: '14ns', ms: 0.000014 },
    { in: '15m', ms: 900_000 },
    { in: '16h', ms: 57_600_000 },
    { in: '3h30m', ms: 12_600_000 },
    { in: '10.5s4m', ms: 250_500 },
    { in: '1h2m3s4ms', ms: 3_723_004 },
  ];
  for (const r of rows) {
    test(`${r.in} -> ${r.ms} ms`, () => {
      const v = parseDuration(r.in);
      assert.ok(!(v instanceof Error), String(v));
      assert.ok(Math.abs(v - r.ms) < 1e-9, `${v} != ${r.ms}`);
    });
  }

  const invalid: { in: string; message: string }[] = [
    { in: '', message: 'time: invalid duration ""' },
    { in: '3', message: 'time: missing unit in duration "3"' },
    { in: '-', message: 'time: invalid duration "-"' },
    { in: 's', message: 'time: invalid duration "s"' },
    { in: '.', message: 'time: invalid duration "."' },
    { in: '-.', message: 'time: invalid duration "-."' },
    { in: '.s', message: 'time: invalid duration ".s"' },
    { in: '+.s', message: 'time: invalid duration "+.s"' },
    { in: '10 m', message: 'time: unknown unit " m" in duration "10 m"' },
    { in: '1d', message: 'time: unknown unit "d" in duration "1d"' },
    { in: '10m5', message: 'time: missing unit in duration "10m5"' },
  ];
  for (const r of invalid) {
    test(`invalid: ${JSON.stringify(r.in)}`, () => {
      const v = parseDuration(r.in);
      assert.ok(v instanceof Error);
      assert.equal(v.message, r.message);
    });
  }

  test('durationMs: undefined for absent or invalid values', () => {
    assert.deepEqual(
      [durationMs(undefined), durationMs(null), durationMs('x'), durationMs('90s')],
      [undefined, undefined, undefined, 90_000],
    );
  });
});

describe('formatDuration (Duration.String)', () => {
  const rows: { ms: number; out: string }[] = [
    { ms: 0, out: '0s' },
    { ms: 300, out: '300ms' },
    { ms: 1500, out: '1.5s' },
    { ms: 90_000, out: '1m30s' },
    { ms: 600_000, out: '10m0s' },
    { ms: 3_600_000, out: '1h0m0s' },
    { ms: 3_723_004, out: '1h2m3.004s' },
    { ms: -5000, out: '-5s' },
  ];
  for (const r of rows) {
    test(`${r.ms} -> ${r.out}`, () => assert.equal(formatDuration(r.ms), r.out));
  }
});
