// Table tests of the cobra-style completion: what `__complete <args> <word>` offers, and the output format.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bashCompletion, completionOutput, Directive, planCompletion, zshCompletion } from './completion.ts';
import { commands } from './cli.ts';

describe('planCompletion', () => {
  const cases: {
    name: string;
    args: string[];
    word: string;
    candidates?: string[];
    fetch?: 'daemonsets' | 'namespaces' | 'contexts';
    directive?: number;
  }[] = [
    {
      name: 'command names with their summaries',
      args: [],
      word: 'pa',
      candidates: [
        'pause\tPause the rolling update (rollingUpdate.paused)',
        'partition\tSet the partition (nodes kept on the old revision), or lower it by a step',
      ],
    },
    { name: 'hidden and unknown: nothing', args: [], word: '__c', candidates: [] },
    { name: 'a DaemonSet name after a command', args: ['status'], word: 'ag', fetch: 'daemonsets' },
    { name: 'flags before the command are skipped', args: ['-n', 'ns', 'history'], word: '', fetch: 'daemonsets' },
    { name: 'nothing after the name', args: ['pause', 'agent'], word: '', candidates: [] },
    {
      name: 'canary: the action first',
      args: ['canary'],
      word: 'p',
      candidates: [
        'promote\tValidate the canary now: the rolling update takes over',
        'pause\tHold the canary where it is',
      ],
    },
    { name: 'canary: then the name', args: ['canary', 'pause'], word: '', fetch: 'daemonsets' },
    {
      name: 'completion shells',
      args: ['completion'],
      word: '',
      candidates: ['bash\tbash completion', 'zsh\tzsh completion'],
    },
    { name: '-n <TAB>: namespaces', args: ['get', '-n'], word: '', fetch: 'namespaces' },
    { name: '--context <TAB>: contexts', args: ['get', '--context'], word: '', fetch: 'contexts' },
    { name: '-o <TAB>: formats', args: ['get', '-o'], word: 'y', candidates: ['yaml'] },
    {
      name: '--output=<TAB>',
      args: ['get'],
      word: '--output=j',
      candidates: ['--output=json'],
      directive: Directive.NoFileComp | Directive.NoSpace,
    },
    {
      name: '--kubeconfig <TAB>: files',
      args: ['get', '--kubeconfig'],
      word: '',
      candidates: [],
      directive: Directive.Default,
    },
    {
      name: 'flags of the command and global ones',
      args: ['status'],
      word: '--t',
      candidates: ['--timeout\tStop waiting after D (e.g. 90s, 5m; 0: never)'],
    },
  ];
  for (const c of cases)
    test(c.name, () => {
      const p = planCompletion(commands, c.args, c.word);
      if (c.candidates) assert.deepEqual(p.candidates, c.candidates);
      assert.equal(p.fetch, c.fetch);
      assert.equal(p.directive, c.directive ?? Directive.NoFileComp);
      assert.equal(p.prefix, c.word);
    });
  test('the flags on the line are passed on (for -n when fetching names)', () => {
    assert.deepEqual(planCompletion(commands, ['-n', 'team', 'get'], '').flags, { namespace: 'team' });
  });
});

test('output: candidates then :<directive>', () => {
  assert.equal(completionOutput(['a', 'b\tdesc'], 4), 'a\nb\tdesc\n:4\n');
});

test('scripts call __complete and register for kubectl-ads', () => {
  assert.match(bashCompletion(), /__complete "\$\{words\[@\]:1:\$\(\(cword - 1\)\)\}" "\$cur"/);
  assert.match(bashCompletion(), /\ncomplete -F __kubectl_ads_complete kubectl-ads\n/);
  assert.match(zshCompletion(), /^#compdef kubectl-ads\n/);
  assert.match(zshCompletion(), /compdef _kubectl_ads kubectl-ads/);
});
