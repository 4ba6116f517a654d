// The README's (and the chart README's) commands as a reader types them: every block marked `<!-- snippet: run -->` (test/readme/snippets.ts)
// runs, in document order, in one shell session on a local cluster of its own with 6 fake nodes (two per zone),
// started the way the README starts one (`bin/advanced-daemonset cluster up`, `eval "$(... cluster env)"`), with
// `~/.kube/config` being that cluster's kubeconfig (the README's manager command names it) and npm's global prefix
// in the session's home (the plugin's `npm install -g`). A block passes when it exits 0 under `set -euo pipefail`.
// The block that installs the chart on a real node runs in e2e/realnode/real-node.e2e.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir, repoRoot } from '../cluster/binaries.ts';
import { SnippetSession } from '../lib/snippets.ts';
import { documentSnippets, sessionSnippets } from '../../test/readme/snippets.ts';

const snippets = sessionSnippets(
  documentSnippets((f) => readFileSync(join(repoRoot, f), 'utf8')),
  'local',
);

describe('the README, as written, on a local cluster', { timeout: 20 * 60_000 }, () => {
  const top = mkdtempSync(join(tmpdir(), 'ads-e2e-readme-'));
  const home = join(top, 'home');
  const npmPrefix = join(home, '.npm-global');
  let session: SnippetSession;
  let failed = false;

  before(async () => {
    mkdirSync(join(home, '.kube'), { recursive: true });
    // The user's environment (CA bundles, proxies), but a home of its own: ~/.kube/config and npm's global prefix.
    session = new SnippetSession(join(top, 'work'), {
      ...process.env,
      PATH: `${join(npmPrefix, 'bin')}:${process.env.PATH}`,
      HOME: home,
      // The binaries cached outside the repository (README: caches) stay where they are, whatever HOME is.
      ADS_CACHE_DIR: cacheDir(),
      ADS_CLUSTER_DIR: join(top, 'cluster'),
      npm_config_prefix: npmPrefix,
      npm_config_cache: join(home, '.npm'),
    });
    // The prologue a reader of "On the local cluster" runs (not a README block: the README's own brings a real node).
    await session.run({
      line: 0,
      lang: 'sh',
      mode: 'run',
      text: 'bin/advanced-daemonset cluster up --nodes 6\neval "$(bin/advanced-daemonset cluster env)"',
    });
    symlinkSync(session.env.KUBECONFIG!, join(home, '.kube', 'config'));
  });

  for (const s of snippets) {
    const first = s.text.split('\n').find((l) => l.trim() && !l.trim().startsWith('#')) ?? '';
    test(`${s.file}:${s.line} (${s.mode}) ${first.slice(0, 60)}`, async () => {
      try {
        // As the README's Helm section says: stop the out-of-cluster manager (Ctrl-C) before installing the chart.
        if (/\bhelm install\b/.test(s.text) && session.running) await stopManager();
        if (s.mode === 'start') await session.start(s);
        else {
          const r = await session.run(s);
          process.stderr.write(`${s.file}:${s.line}: exit ${r.code} in ${r.seconds.toFixed(1)}s\n`);
        }
      } catch (err) {
        failed = true;
        throw err;
      }
    });
  }

  /** Stops the background blocks; the manager took its webhook registration back, so writes work without it. */
  async function stopManager(): Promise<void> {
    await session.stop();
    for (const kind of ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration']) {
      assert.notEqual(
        await session.probe(
          `kubectl get ${kind} advanced-daemonset-${kind.startsWith('m') ? 'mutating' : 'validating'}`,
        ),
        0,
        `the out-of-cluster manager removed its ${kind} on SIGTERM`,
      );
    }
    assert.equal(await session.probe('kubectl label ads node-agent checked-after-stop=true'), 0, 'writes work');
  }

  test('the README ran', () => {
    assert.ok(session.ran.blocks >= snippets.length, `${session.ran.blocks} of ${snippets.length} blocks`);
    process.stderr.write(
      `README snippets: ${session.ran.blocks} blocks, ${session.ran.commands} commands run as written (with cluster up)\n`,
    );
  });

  after(async () => {
    await session?.stop();
    await session?.run({ line: 0, lang: 'sh', mode: 'run', text: 'bin/advanced-daemonset cluster down' });
    if (failed) process.stderr.write(`README session failed; its files are kept in ${top}\n`);
    else rmSync(top, { recursive: true, force: true });
  });
});
