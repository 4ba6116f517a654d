import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  SNIPPET_DOCUMENTS,
  documentSnippets,
  parseSnippets,
  sessionSnippets,
  unmarkedShellBlocks,
  type Snippet,
} from './snippets.ts';

const root = join(import.meta.dirname, '..', '..');

test('parseSnippets: fences, markers, indented blocks', () => {
  const cases: { name: string; md: string; want: Partial<Snippet>[] }[] = [
    {
      name: 'a block without a marker',
      md: 'text\n```sh\necho hi\n```\n',
      want: [{ line: 2, lang: 'sh', text: 'echo hi' }],
    },
    {
      name: 'run, on the real node, skip, save, start',
      md: [
        '<!-- snippet: run -->',
        '```sh',
        'a',
        '```',
        '<!-- snippet: run on-real-node -->',
        '```sh',
        'b',
        '```',
        '<!-- snippet: skip needs Docker -->',
        '```sh',
        'c',
        '```',
        '<!-- snippet: save x.yaml -->',
        '```yaml',
        'kind: X',
        '```',
        '<!-- snippet: start ready=kubectl get ns -->',
        '```sh',
        'serve',
        '```',
      ].join('\n'),
      want: [
        { line: 2, text: 'a', mode: 'run', where: 'local' },
        { line: 6, text: 'b', mode: 'run', where: 'real-node' },
        { line: 10, text: 'c', mode: 'skip', arg: 'needs Docker' },
        { line: 14, lang: 'yaml', text: 'kind: X', mode: 'save', arg: 'x.yaml' },
        { line: 18, text: 'serve', mode: 'start', where: 'local', ready: 'kubectl get ns' },
      ],
    },
    {
      name: 'a block inside a list item loses its indentation; a marker two lines up does not count',
      md: '- item\n\n  <!-- snippet: run -->\n  ```sh\n  kubectl get ns\n    --flag\n  ```\n<!-- snippet: run -->\n\n```sh\nx\n```',
      want: [
        { line: 4, text: 'kubectl get ns\n  --flag', mode: 'run' },
        { line: 10, text: 'x', mode: undefined },
      ],
    },
  ];
  for (const c of cases) {
    const got = parseSnippets(c.md);
    assert.equal(got.length, c.want.length, c.name);
    c.want.forEach((w, i) => {
      for (const [k, v] of Object.entries(w))
        assert.deepEqual(got[i]![k as keyof Snippet], v, `${c.name}: [${i}].${k}`);
    });
  }
});

test('parseSnippets refuses a marker without what it needs', () => {
  for (const [md, message] of [
    ['<!-- snippet: skip -->\n```sh\nx\n```', /needs a reason/],
    ['<!-- snippet: save -->\n```sh\nx\n```', /needs a file name/],
    ['<!-- snippet: start -->\n```sh\nx\n```', /needs ready=CMD/],
    ['<!-- snippet: run elsewhere -->\n```sh\nx\n```', /takes only on-real-node/],
  ] as const) {
    assert.throws(() => parseSnippets(md), message);
  }
});

test('sessionSnippets: each session runs its own blocks, in document order; saves go to the local one', () => {
  const all = parseSnippets(
    [
      '<!-- snippet: save a.yaml -->',
      '```yaml',
      'a',
      '```',
      '<!-- snippet: run on-real-node -->',
      '```sh',
      'r',
      '```',
      '<!-- snippet: run -->',
      '```sh',
      'l',
      '```',
      '<!-- snippet: skip why -->',
      '```sh',
      's',
      '```',
    ].join('\n'),
  );
  assert.deepEqual(
    sessionSnippets(all, 'local').map((s) => s.text),
    ['a', 'l'],
  );
  assert.deepEqual(
    sessionSnippets(all, 'real-node').map((s) => s.text),
    ['r'],
  );
});

test('the READMEs: every shell block is run by a test or says why not', () => {
  const snippets = documentSnippets((f) => readFileSync(join(root, f), 'utf8'));
  assert.deepEqual(
    unmarkedShellBlocks(snippets).map((s) => `${s.file}:${s.line}: ${s.text.split('\n')[0]}`),
    [],
    'add <!-- snippet: run --> (or skip REASON) before each',
  );
  assert.ok(sessionSnippets(snippets, 'local').length >= 5, 'the local session has blocks to run');
  assert.equal(
    sessionSnippets(snippets, 'real-node').length,
    2,
    'the real-node blocks: cluster and image; helm install',
  );
});

test('every document of docs/ with a shell block is one whose blocks are checked', () => {
  const withShell = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`)
    .filter((f) => parseSnippets(readFileSync(join(root, f), 'utf8')).some((s) => s.lang === 'sh'));
  assert.deepEqual(
    withShell.filter((f) => !(SNIPPET_DOCUMENTS as readonly string[]).includes(f)),
    [],
  );
});
