// Dependencies point one way (docs/architecture.md, "Layers"): this test reads the import statements of every
// .ts file in the repository (TypeScript's own pre-parser, so `import type`, `export … from` and literal dynamic
// imports count) and fails on an import that breaks a rule, naming the file and the import.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SKIP = new Set(['node_modules', 'dist', '.git', '.cache', 'coverage']);

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    if (SKIP.has(entry)) return [];
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [relative(root, p).split(sep).join('/')] : [];
  });
}

/** The repository files a file imports (relative imports only; packages and node: builtins are left out). */
function localImports(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) =>
      relative(root, resolve(root, dirname(file), spec))
        .split(sep)
        .join('/'),
    );
}

const files = tsFiles(root);
const graph = new Map(files.map((f) => [f, localImports(f)]));
const top = (file: string) => file.split('/')[0]!;

/** What `entry` reaches through its imports, itself included. */
function reachable(entry: string): Set<string> {
  const seen = new Set<string>();
  const stack = [entry];
  while (stack.length > 0) {
    const f = stack.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    stack.push(...(graph.get(f) ?? []));
  }
  return seen;
}

const rules: {
  name: string;
  from: (file: string) => boolean;
  refused: (target: string, file: string) => boolean;
}[] = [
  {
    name: 'src/ imports only src/ (and npm packages, and package.json for the version)',
    from: (f) => top(f) === 'src',
    refused: (t) => t !== 'package.json' && top(t) !== 'src',
  },
  {
    name: 'the product (controller/, webhook/, certs/) imports no development folder and not cmd/',
    from: (f) => ['controller', 'webhook', 'certs'].includes(top(f)),
    refused: (t) => ['e2e', 'bench', 'hack', 'test', 'cmd', 'plugin'].includes(top(t)),
  },
  {
    // cert-manager's cmd/<binary>/app: components know nothing of their siblings; cmd/ wires them (tests may borrow).
    name: 'controller/, webhook/ and certs/ never import one another (cmd/ wires them)',
    from: (f) => ['controller', 'webhook', 'certs'].includes(top(f)) && !f.endsWith('.test.ts'),
    refused: (t, f) => top(t) !== top(f) && ['controller', 'webhook', 'certs'].includes(top(t)),
  },
  {
    name: 'the kubectl plugin (plugin/) imports only plugin/ and src/ (and package.json for the version)',
    from: (f) => top(f) === 'plugin',
    refused: (t) => t !== 'package.json' && !['plugin', 'src'].includes(top(t)),
  },
  {
    name: 'cmd/ is on top: only cmd/, hack/ and test/ (the chart test checks its flags against the command) import it',
    from: (f) => !['cmd', 'hack', 'test'].includes(top(f)),
    refused: (t) => top(t) === 'cmd',
  },
  {
    name: 'e2e/ does not import bench/ (bench/ uses e2e/, not the reverse)',
    from: (f) => top(f) === 'e2e',
    refused: (t) => top(t) === 'bench',
  },
];

describe('import directions', () => {
  test('the scan sees the tree (every top folder with code, and resolvable imports)', () => {
    for (const folder of ['cmd', 'hack', 'src', 'plugin', 'controller', 'webhook', 'certs', 'e2e', 'bench', 'test'])
      assert.ok(
        files.some((f) => top(f) === folder),
        `no .ts file under ${folder}/`,
      );
    const missing = [...graph].flatMap(([f, imports]) =>
      imports.filter((t) => !existsSync(join(root, t))).map((t) => `${f} -> ${t}`),
    );
    assert.deepEqual(missing, [], 'imports of files that do not exist');
  });

  for (const rule of rules)
    test(rule.name, () => {
      const broken = [...graph]
        .filter(([f]) => rule.from(f))
        .flatMap(([f, imports]) => imports.filter((t) => rule.refused(t, f)).map((t) => `${f} -> ${t}`));
      assert.deepEqual(broken, []);
    });

  // What hack/bundle.ts bundles into the image (dist/main.mjs, dist/launch.mjs).
  // ... and into the kubectl plugin's package (kubectl-ads.mjs).
  for (const entry of ['cmd/advanced-daemonset/main.ts', 'cmd/advanced-daemonset/launch.ts', 'cmd/kubectl-ads/main.ts'])
    test(`${entry} (bundled into the image) never reaches e2e/, bench/, hack/ or test/`, () => {
      const reached = reachable(entry);
      assert.ok(reached.size > 1 || entry.endsWith('launch.ts'), `${entry} imports nothing?`);
      assert.deepEqual(
        [...reached].filter((f) => ['e2e', 'bench', 'hack', 'test'].includes(top(f))),
        [],
      );
    });

  test('the rules do catch a breaking import (a tree with src/ -> controller/, e2e/ -> bench/, webhook/ -> certs/)', () => {
    const fake = new Map([
      ['src/a.ts', ['controller/b.ts']],
      ['e2e/c.ts', ['bench/d.ts']],
      ['controller/e.ts', ['cmd/advanced-daemonset/main.ts']],
      ['plugin/f.ts', ['controller/g.ts']],
      ['webhook/h.ts', ['certs/i.ts', 'webhook/j.ts']],
    ]);
    const caught = rules.filter((rule) =>
      [...fake].some(([f, imports]) => rule.from(f) && imports.some((t) => rule.refused(t, f))),
    );
    assert.deepEqual(
      caught.map((r) => r.name),
      rules.map((r) => r.name),
    );
  });
});
