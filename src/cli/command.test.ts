// The flag table: one declaration gives the parser (defaults, values, deprecated names) and --help.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  boolFlag,
  durationFlag,
  enumFlag,
  flagsHelp,
  formatDuration,
  intFlag,
  parseFlags,
  stringFlag,
  stringsFlag,
  switchFlag,
  UserError,
  type Flags,
} from './command.ts';

const flags = {
  'webhook-port': intFlag('HTTPS port', 9876, { deprecatedAlias: 'port' }),
  drain: durationFlag('keep serving this long', 5_000),
  'leader-elect': boolFlag('Lease leader election', true),
  mode: enumFlag(['a', 'b'], 'the mode', 'a'),
  host: stringsFlag('a host; repeatable', 'HOST'),
  name: stringFlag('a name', { arg: 'NAME' }),
  force: switchFlag('overwrite'),
} satisfies Flags;

const command = { name: 'x', usage: 'Usage: x' };

describe('parseFlags', () => {
  const rows: { name: string; argv: string[]; want: Record<string, unknown>; given?: string[] }[] = [
    {
      name: 'nothing given: every default',
      argv: [],
      want: { 'webhook-port': 9876, drain: 5_000, 'leader-elect': true, mode: 'a', host: [], force: false },
      given: [],
    },
    {
      name: 'each type parsed',
      argv: ['--webhook-port', '0', '--drain', '1.5s', '--leader-elect=false', '--mode', 'b', '--force'],
      want: { 'webhook-port': 0, drain: 1_500, 'leader-elect': false, mode: 'b', force: true },
      given: ['webhook-port', 'drain', 'leader-elect', 'mode', 'force'],
    },
    {
      name: 'the deprecated name still works, under the new name',
      argv: ['--port', '8443'],
      want: { 'webhook-port': 8443 },
      given: ['webhook-port'],
    },
    {
      name: 'a repeatable flag collects every value',
      argv: ['--host', 'a', '--host', 'b'],
      want: { host: ['a', 'b'] },
    },
    { name: 'a string without a default is undefined', argv: [], want: { name: undefined } },
  ];
  for (const row of rows)
    test(row.name, () => {
      const parsed = parseFlags(command, row.argv, flags)!;
      for (const [k, v] of Object.entries(row.want)) assert.deepEqual(parsed.values[k as keyof typeof flags], v, k);
      if (row.given) assert.deepEqual([...parsed.given].sort(), [...row.given].sort());
    });

  const refused: { name: string; argv: string[]; message: RegExp }[] = [
    { name: 'not an integer', argv: ['--webhook-port', 'many'], message: /^--webhook-port must be a non-negative/ },
    { name: 'named as given: the old name', argv: ['--port', 'x'], message: /^--port must be a non-negative/ },
    {
      name: 'both names at once',
      argv: ['--port', '1', '--webhook-port', '2'],
      message: /--webhook-port and --port \(its deprecated name\) cannot both be set/,
    },
    { name: 'not a duration', argv: ['--drain', '5'], message: /^--drain must be a duration/ },
    { name: 'not a bool', argv: ['--leader-elect=yes'], message: /^--leader-elect must be true or false/ },
    { name: 'not one of the words', argv: ['--mode', 'c'], message: /^--mode must be one of a, b, got "c"/ },
    { name: 'an unknown flag', argv: ['--nope'], message: /^x: .*nope.*\nRun with --help/s },
  ];
  for (const row of refused)
    test(`refuses ${row.name}`, () =>
      assert.throws(
        () => parseFlags(command, row.argv, flags),
        (e: unknown) => e instanceof UserError && e.exitCode === 2 && row.message.test(e.message),
      ));
});

describe('flagsHelp', () => {
  const help = flagsHelp(flags);
  const rows: { name: string; line: RegExp }[] = [
    { name: 'an int with its default', line: /^ {2}--webhook-port N +HTTPS port \(default 9876\)$/m },
    { name: 'the deprecated name, marked', line: /^ {2}--port N +deprecated: use --webhook-port$/m },
    { name: 'a duration shown as one', line: /^ {2}--drain D +keep serving this long \(default 5s\)$/m },
    { name: 'a bool', line: /^ {2}--leader-elect true\|false +Lease leader election \(default true\)$/m },
    { name: 'the words of an enum', line: /^ {2}--mode a\|b +the mode \(default a\)$/m },
    { name: 'a switch, no default', line: /^ {2}--force +overwrite$/m },
    { name: 'no default when there is none', line: /^ {2}--name NAME +a name$/m },
    { name: '--help last', line: /\n {2}-h, --help +show this help$/ },
  ];
  for (const row of rows) test(row.name, () => assert.match(help, row.line));

  test('long help is wrapped under its column', () => {
    const text = flagsHelp({ x: switchFlag('word '.repeat(40).trim()) }, false);
    const lines = text.split('\n');
    assert.ok(lines.length > 1 && lines.every((l) => l.length <= 110), text);
    assert.ok(
      lines.slice(1).every((l) => l.startsWith(' '.repeat(37))),
      text,
    );
  });

  const durations: { name: string; ms: number; want: string }[] = [
    { name: 'seconds that are not whole minutes', ms: 125_000, want: '125s' },
    { name: 'whole minutes', ms: 120_000, want: '2m' },
    { name: 'whole hours', ms: 3_600_000, want: '1h' },
    { name: 'under a second', ms: 500, want: '500ms' },
    { name: 'zero', ms: 0, want: '0ms' },
  ];
  for (const row of durations)
    test(`formatDuration: ${row.name}`, () => assert.equal(formatDuration(row.ms), row.want));
});

test('runMain: output piped into a reader that stops early ends quietly with the exit code, no stack trace', async () => {
  const { spawn } = await import('node:child_process');
  // A command that prints far more than a pipe holds; the reader closes after the first chunk.
  const script = `
    import { runMain } from ${JSON.stringify(new URL('./command.ts', import.meta.url).href)};
    await runMain([{ name: 'big', summary: '', usage: '', run: async () => {
      for (let i = 0; i < 2000; i++) process.stdout.write('x'.repeat(1024) + '\\n');
      return 0;
    } }], ['big']);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.once('data', () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, stderr);
  assert.doesNotMatch(stderr, /EPIPE|at /, 'no stack trace');
});
