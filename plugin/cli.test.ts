// The dispatch without a cluster: help, version, usage errors (kubectl's wording and exit 1), completion scripts,
// and that a command needing the cluster reports a kubeconfig problem as a message, not a stack.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from './cli.ts';
import type { Io } from './commands.ts';

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    isTTY: false,
    columns: 80,
    signal: new AbortController().signal,
    now: () => 0,
  };
  const code = await runCli(argv, io);
  return { code, out, err };
}

describe('runCli', () => {
  const cases: { name: string; argv: string[]; code: number; out?: RegExp; err?: string | RegExp }[] = [
    {
      name: 'no command: the overview',
      argv: [],
      code: 0,
      out: /^Operate OpenKruise Advanced DaemonSets[\s\S]*\n {2}status {6}/,
    },
    { name: '--help of a command', argv: ['status', '--help'], code: 0, out: /Usage:\n {2}kubectl ads status NAME/ },
    { name: 'help COMMAND', argv: ['help', 'partition'], code: 0, out: /--step K/ },
    { name: 'version', argv: ['version'], code: 0, out: /^kubectl-ads \d+\.\d+\.\d+\n$/ },
    {
      name: 'unknown command',
      argv: ['frob'],
      code: 1,
      err: 'error: unknown command "frob" for "kubectl ads"\nSee \'kubectl ads --help\' for usage.\n',
    },
    {
      name: 'unknown flag of a command',
      argv: ['get', '--watch'],
      code: 1,
      err: "error: unknown flag: --watch\nSee 'kubectl ads get --help' for usage.\n",
    },
    {
      name: 'missing NAME',
      argv: ['pause'],
      code: 1,
      err: "error: NAME is required\nSee 'kubectl ads pause --help' for usage.\n",
    },
    {
      name: 'partition needs a value or --step, not both',
      argv: ['partition', 'x', '2', '--step', '1'],
      code: 1,
      err: /^error: give either a partition \(N or N%\) or --step K\n/,
    },
    {
      name: 'a negative partition is a value, refused as such (not a shorthand flag)',
      argv: ['partition', 'x', '-1'],
      code: 1,
      err: 'error: invalid partition "-1": want a non-negative integer (nodes) or a percentage 0%-100%\n',
    },
    {
      name: 'bad -o',
      argv: ['get', '-o', 'table', '--kubeconfig', '/nonexistent'],
      code: 1,
      err: /^error: unable to match a printer suitable for the output format "table", allowed formats are: json,yaml,wide,name\n/,
    },
    {
      name: 'a missing --kubeconfig file: a message, exit 1',
      argv: ['get', '--kubeconfig', '/nonexistent/kubeconfig'],
      code: 1,
      err: 'error: stat /nonexistent/kubeconfig: no such file or directory\n',
    },
    {
      name: 'completion needs a shell',
      argv: ['completion'],
      code: 1,
      err: /^error: completion needs a shell: bash or zsh\n/,
    },
    { name: 'completion bash', argv: ['completion', 'bash'], code: 0, out: /^# bash completion for kubectl-ads\n/ },
  ];
  for (const c of cases)
    test(c.name, async () => {
      const r = await cli(c.argv);
      assert.equal(r.code, c.code, r.err);
      if (c.out) assert.match(r.out, c.out);
      if (typeof c.err === 'string') assert.equal(r.err, c.err);
      else if (c.err) assert.match(r.err, c.err);
    });
});
