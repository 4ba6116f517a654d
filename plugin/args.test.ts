// Table tests of the kubectl-style argument parser (pflag's forms) and Go durations.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GLOBAL_FLAGS, parseArgv, parseArgvLenient, parseGoDuration, UsageError, type FlagSpec } from './args.ts';

const SPECS: FlagSpec[] = [
  ...GLOBAL_FLAGS,
  { name: 'output', short: 'o', kind: 'string', help: '' },
  { name: 'all-namespaces', short: 'A', kind: 'bool', help: '' },
  { name: 'watch', short: 'w', kind: 'bool', help: '' },
  { name: 'timeout', kind: 'string', help: '' },
];

describe('parseArgv', () => {
  const cases: { name: string; argv: string[]; flags: Record<string, string | boolean>; positionals: string[] }[] = [
    { name: 'positionals only', argv: ['get', 'x'], flags: {}, positionals: ['get', 'x'] },
    { name: '--flag value', argv: ['get', '--namespace', 'ns'], flags: { namespace: 'ns' }, positionals: ['get'] },
    { name: '--flag=value', argv: ['--namespace=ns', 'get'], flags: { namespace: 'ns' }, positionals: ['get'] },
    { name: '-n value', argv: ['get', '-n', 'ns', 'x'], flags: { namespace: 'ns' }, positionals: ['get', 'x'] },
    { name: '-nvalue', argv: ['get', '-nns'], flags: { namespace: 'ns' }, positionals: ['get'] },
    { name: '-n=value', argv: ['get', '-n=ns'], flags: { namespace: 'ns' }, positionals: ['get'] },
    { name: 'bool alone', argv: ['status', 'x', '--watch'], flags: { watch: true }, positionals: ['status', 'x'] },
    {
      name: 'bool =false',
      argv: ['status', '--watch=false', 'x'],
      flags: { watch: false },
      positionals: ['status', 'x'],
    },
    { name: 'bool =0', argv: ['status', '--watch=0', 'x'], flags: { watch: false }, positionals: ['status', 'x'] },
    {
      name: 'grouped shorthands with a value last',
      argv: ['get', '-Ao', 'json'],
      flags: { 'all-namespaces': true, output: 'json' },
      positionals: ['get'],
    },
    {
      name: 'shorthand bool =false',
      argv: ['get', '-A=false'],
      flags: { 'all-namespaces': false },
      positionals: ['get'],
    },
    {
      name: 'the last of a repeated flag wins',
      argv: ['-n', 'a', 'get', '-n', 'b'],
      flags: { namespace: 'b' },
      positionals: ['get'],
    },
    { name: '-- ends the flags', argv: ['get', '--', '-x'], flags: {}, positionals: ['get', '-x'] },
    { name: 'a lone dash is a positional', argv: ['get', '-'], flags: {}, positionals: ['get', '-'] },
  ];
  for (const c of cases)
    test(c.name, () => {
      const r = parseArgv(c.argv, SPECS);
      assert.deepEqual(r.flags, c.flags);
      assert.deepEqual(r.positionals, c.positionals);
    });

  const errors: { name: string; argv: string[]; message: string }[] = [
    { name: 'unknown long flag', argv: ['get', '--nope'], message: 'unknown flag: --nope' },
    { name: 'unknown shorthand', argv: ['get', '-x'], message: "unknown shorthand flag: 'x' in -x" },
    { name: 'missing value', argv: ['get', '-n'], message: 'flag needs an argument: --namespace' },
    {
      name: 'bad bool',
      argv: ['status', '--watch=maybe'],
      message: 'invalid argument "maybe" for "watch" flag: strconv.ParseBool: parsing "maybe": invalid syntax',
    },
  ];
  for (const c of errors)
    test(`error: ${c.name}`, () => {
      assert.throws(
        () => parseArgv(c.argv, SPECS),
        (err: unknown) => err instanceof UsageError && err.message === c.message,
      );
    });

  test('lenient parsing skips unknown flags and reports a flag waiting for its value', () => {
    const r = parseArgvLenient(['--nope', 'get', '-n'], SPECS);
    assert.deepEqual(r.positionals, ['get']);
    assert.equal(r.pendingFlag?.name, 'namespace');
  });
});

describe('parseGoDuration', () => {
  const cases: { raw: string; ms?: number }[] = [
    { raw: '0', ms: 0 },
    { raw: '90s', ms: 90_000 },
    { raw: '5m', ms: 300_000 },
    { raw: '1h30m', ms: 5_400_000 },
    { raw: '500ms', ms: 500 },
    { raw: '1.5s', ms: 1500 },
    { raw: '10' },
    { raw: '' },
    { raw: '5x' },
    { raw: '5m1' },
  ];
  for (const c of cases)
    test(`"${c.raw}" -> ${c.ms ?? 'error'}`, () => {
      if (c.ms === undefined) assert.throws(() => parseGoDuration(c.raw, 'timeout'), /time: invalid duration/);
      else assert.equal(parseGoDuration(c.raw, 'timeout'), c.ms);
    });
});
