// Links between the repository's Markdown documents resolve: the file exists and, for `#anchor`, a heading of it
// has that GitHub anchor. Sections move between the README and docs/; a stale link is caught here, not by a reader.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const SKIP = new Set(['node_modules', 'dist', '.git', '.cache', 'coverage']);
/** Every Markdown document of the repository. */
function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    if (SKIP.has(entry)) return [];
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) return markdownFiles(p);
    return p.endsWith('.md') ? [relative(root, p)] : [];
  });
}
const documents = markdownFiles(root);

/** GitHub's heading anchor: lower case, punctuation but '-' and '_' dropped, spaces to '-'. */
export function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => githubAnchor(m[1]!)));
}

test('githubAnchor: as GitHub renders headings', () => {
  assert.equal(githubAnchor('`kubectl ads`: the kubectl plugin'), 'kubectl-ads-the-kubectl-plugin');
  assert.equal(githubAnchor('Who may read /metrics'), 'who-may-read-metrics');
  assert.equal(githubAnchor('4b. Webhook under load'), '4b-webhook-under-load');
});

test('every relative Markdown link names a file that exists and a heading it has', () => {
  const broken: string[] = [];
  for (const doc of documents) {
    const text = readFileSync(join(root, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/i.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path ? join(root, dirname(doc), path) : join(root, doc);
      if (!existsSync(file)) {
        broken.push(`${doc}: ${target} (no such file)`);
        continue;
      }
      if (anchor && statSync(file).isFile() && file.endsWith('.md') && !anchorsOf(file).has(anchor))
        broken.push(`${doc}: ${target} (no heading #${anchor} in ${relative(root, file)})`);
    }
  }
  assert.deepEqual(broken, []);
});
