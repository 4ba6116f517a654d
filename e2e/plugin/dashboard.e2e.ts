// e2e of `kubectl ads dashboard`: the real plugin (bin/kubectl-ads) serves the page against the real control plane,
// headless Chromium (Debian's package, installed by e2e/hack/install-chromium.sh; driven by playwright-core) loads it,
// and the assertions read the DOM while a rollout runs on kwok nodes: cells move from the old revision to the new one
// (the counts only ever move one way), the node left out by rollingUpdate.selector and the one kept by the partition
// are marked so, a pod held by a lifecycle preDelete hook shows PreparingDelete, one held by a finalizer shows
// terminating, and the DaemonSet's events appear. A second test feeds the page 1,000 nodes from an in-memory source
// and checks that it keeps up. Screenshots are kept as test artefacts (e2e/lib/artefacts.ts); their paths are printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from '../cluster/binaries.ts';
import { artefactPath } from '../lib/artefacts.ts';
import { eventually, kubectl, kubeconfig, patchPod, type PodJson } from '../lib/kube.ts';
import { adsPods, imagePatch, patchAds } from '../lib/ads.ts';
import { fixture, layout, rolledOutDaemonSet, waitLayout } from '../strategies/lib.ts';
import { sleep, until } from '../../src/testing/wait.ts';
import { createDashboardServer } from '../../plugin/dashboard/server.ts';
import { loadAssets } from '../../plugin/dashboard/assets.ts';
import { StaticSource } from '../../plugin/dashboard/testing.ts';
import { daemonSetRow, nodeMap } from '../../plugin/dashboard/model.ts';
import { T0, newDaemonSet, newNode, newPod } from '../../src/daemonset/test-fixtures.ts';

const HOOK = 'example.io/hold';
const FINALIZER = 'example.io/keep';
const STATE_LABEL = 'lifecycle.apps.kruise.io/state';

/** The system's Chromium (playwright-core downloads no browser); $ADS_E2E_CHROMIUM overrides. */
function chromiumPath(): string {
  const candidates = [process.env.ADS_E2E_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const found = candidates.find((p): p is string => !!p && existsSync(p));
  if (!found) throw new Error('no Chromium found: run e2e/hack/install-chromium.sh (Debian package chromium)');
  return found;
}

async function launchBrowser(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
}

/** `kubectl ads dashboard` as a user runs it (bin/kubectl-ads, or $ADS_E2E_KUBECTL_ADS), on any free port. */
class DashboardProcess {
  output = '';
  private constructor(
    readonly child: ChildProcess,
    public url = '',
  ) {}

  static async start(args: string[]): Promise<DashboardProcess> {
    const program = process.env.ADS_E2E_KUBECTL_ADS || join(repoRoot, 'bin', 'kubectl-ads');
    const child = spawn(program, ['dashboard', '--port', '0', ...args], {
      env: { ...process.env, KUBECONFIG: kubeconfig() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const d = new DashboardProcess(child);
    const collect = (chunk: Buffer) => (d.output += chunk.toString());
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    let exited: number | null | undefined;
    child.on('exit', (code) => (exited = code));
    d.url = await until(
      'kubectl ads dashboard to print its URL',
      () => {
        if (exited !== undefined) throw new Error(`kubectl ads dashboard exited with ${exited}: ${d.output}`);
        return /serving (http:\/\/127\.0\.0\.1:\d+\/)/.exec(d.output)?.[1];
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    ).catch((err: unknown) => {
      child.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n  output: ${d.output}`, { cause: err });
    });
    return d;
  }

  /** Ctrl-C, as a user stops it; resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.kill('SIGINT');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }
}

interface CellDom {
  revision: string;
  state: string;
  hold: string;
  hash: string;
}

/** What the page shows, read from the DOM's data-* attributes (the same ones the stylesheet draws from). */
interface PageState {
  cells: Record<string, CellDom>;
  events: { reason: string; message: string }[];
  /** "Updated" column per DaemonSet row. */
  updated: Record<string, string>;
  updateRevision: string;
  synced: boolean;
}

// Evaluated in the page (a string: the e2e type-checks without the DOM library).
const READ_PAGE = `(() => {
  const cells = {};
  for (const el of document.querySelectorAll('[data-grid] [data-node]'))
    cells[el.getAttribute('data-node')] = {
      revision: el.getAttribute('data-revision') || '',
      state: el.getAttribute('data-state') || '',
      hold: el.getAttribute('data-hold') || '',
      hash: el.getAttribute('data-hash') || '',
    };
  const events = [...document.querySelectorAll('[data-events] [data-event-reason]')].map((tr) => ({
    reason: tr.getAttribute('data-event-reason') || '',
    message: (tr.querySelector('td.msg') || {}).textContent || '',
  }));
  const updated = {};
  for (const tr of document.querySelectorAll('tr[data-ds]'))
    updated[tr.getAttribute('data-ds')] = (tr.querySelector('[data-updated]') || {}).textContent || '';
  const detail = document.querySelector('[data-detail]');
  return {
    cells,
    events,
    updated,
    updateRevision: detail ? detail.getAttribute('data-update-revision') || '' : '',
    synced: detail ? detail.getAttribute('data-synced') === 'true' : false,
  };
})()`;

const readPage = (page: Page) => page.evaluate(READ_PAGE) as Promise<PageState>;

const count = (s: PageState, revision: string) => Object.values(s.cells).filter((c) => c.revision === revision).length;

/** Reads the page continuously (every 150 ms) until stopped: what a claim of "never" needs. */
class PageSampler {
  readonly samples: PageState[] = [];
  private stopped = false;
  private readonly loop: Promise<void>;
  constructor(private readonly page: Page) {
    this.loop = this.run();
  }
  private async run(): Promise<void> {
    while (!this.stopped) {
      this.samples.push(await readPage(this.page));
      await sleep(150);
    }
  }
  async stop(): Promise<PageState[]> {
    this.stopped = true;
    await this.loop;
    return this.samples;
  }
}

/**
 * Plays the user's hook controller: releases every pod in PreparingDelete (hook label set to false) and removes the
 * finalizer of every terminating pod, so the rollout goes on by itself.
 */
class Releaser {
  private stopped = false;
  private readonly loop: Promise<void>;
  constructor(
    private readonly ns: string,
    private readonly name: string,
  ) {
    this.loop = this.run();
  }
  private async run(): Promise<void> {
    while (!this.stopped) {
      for (const p of await adsPods(this.ns, this.name).catch(() => [] as PodJson[])) {
        if (p.metadata.labels?.[STATE_LABEL] === 'PreparingDelete' && p.metadata.labels[HOOK] === 'true')
          await releaseHook(this.ns, p).catch(() => undefined);
        if (p.metadata.deletionTimestamp && p.metadata.finalizers?.includes(FINALIZER))
          await releaseFinalizer(this.ns, p).catch(() => undefined);
      }
      await sleep(300);
    }
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

const releaseHook = (ns: string, p: PodJson) =>
  kubectl(['label', 'pod', p.metadata.name, '-n', ns, `${HOOK}=false`, '--overwrite']);
const releaseFinalizer = (ns: string, p: PodJson) =>
  patchPod(ns, p.metadata.name, 'json', [{ op: 'remove', path: '/metadata/finalizers' }]);

describe('kubectl ads dashboard on a rollout', { timeout: 600_000 }, () => {
  // Node 0 is outside rollingUpdate.selector (zone=a); partition 1 keeps one selected node (the lowest name, 1).
  const f = fixture('dash', 6, (i): Record<string, string> => (i === 0 ? {} : { zone: 'a' }));
  const name = 'dash';
  let browser: Browser | undefined;
  let dashboard: DashboardProcess | undefined;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await dashboard?.stop();
    // Never leave a finalizer behind: it would keep the namespace terminating.
    for (const p of await adsPods(f.ns, name).catch(() => [] as PodJson[]))
      if (p.metadata.finalizers?.length) await releaseFinalizer(f.ns, p).catch(() => undefined);
  });

  test('cells move old -> new live, boundaries, PreparingDelete and terminating pods, and events show', async (t) => {
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: {
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { maxUnavailable: 1, partition: 1, selector: { matchLabels: { zone: 'a' } } },
        },
      },
      mutate: (m) => {
        const template = (
          m.spec as { template: { metadata: { labels: Record<string, string>; finalizers?: string[] } } }
        ).template;
        template.metadata.labels[HOOK] = 'true';
        template.metadata.finalizers = [FINALIZER];
        m.spec.lifecycle = { preDelete: { labelsHandler: { [HOOK]: 'true' } } };
      },
    });
    const [outside, kept, ...updatable] = f.nodes as [string, string, ...string[]];

    dashboard = await DashboardProcess.start(['-n', f.ns]);
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${dashboard.url}#/${f.ns}/${name}`);
    const first = await eventually(
      'the page to show every node on the first revision',
      async () => {
        const s = await readPage(page);
        return s.synced && Object.keys(s.cells).length === 6 && count(s, 'new') === 6 && s.updateRevision === v1 && s;
      },
      { timeoutMs: 60_000 },
    );
    assert.deepEqual(Object.keys(first.cells).sort(), [...f.nodes].sort(), 'one cell per node of the DaemonSet');
    assert.ok(
      Object.values(first.cells).every((c) => c.state === 'available' && c.hash === v1 && c.hold === ''),
      `every cell available on ${v1}: ${JSON.stringify(first.cells)}`,
    );
    assert.ok(
      first.events.some((e) => e.reason === 'SuccessfulCreate'),
      `the creation events show: ${JSON.stringify(first.events)}`,
    );

    // The rollout: from here the page is read continuously.
    const sampler = new PageSampler(page);
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const held = await eventually(
      'a cell in PreparingDelete (the preDelete hook holds the first old pod)',
      async () => {
        const s = await readPage(page);
        const cells = Object.entries(s.cells).filter(([, c]) => c.state === 'preparing-delete');
        return s.updateRevision !== v1 && cells.length === 1 && { node: cells[0]![0], state: s };
      },
      { timeoutMs: 90_000 },
    );
    const v2 = held.state.updateRevision;
    assert.ok(updatable.includes(held.node), `the held pod is on a node the rollout may update: ${held.node}`);
    assert.equal(held.state.cells[held.node]!.revision, 'old');
    // The boundaries, from the start of the rollout.
    assert.equal(held.state.cells[outside]!.hold, 'selector', `${outside} does not match rollingUpdate.selector`);
    assert.equal(held.state.cells[kept]!.hold, 'partition', `${kept} is kept by the partition`);
    for (const n of updatable) assert.equal(held.state.cells[n]!.hold, '', `${n} may be updated`);
    const heldPod = (await adsPods(f.ns, name)).find(
      (p) => p.spec.nodeName === held.node && !p.metadata.deletionTimestamp,
    )!;
    assert.equal(heldPod.metadata.labels?.[STATE_LABEL], 'PreparingDelete', 'the page agrees with the pod');
    const midShot = artefactPath('dashboard-preparing-delete.png');
    await page.screenshot({ path: midShot, fullPage: true });
    t.diagnostic(`screenshot (PreparingDelete): ${midShot}`);

    // Released by its hook, the pod is deleted; its finalizer keeps it terminating.
    await releaseHook(f.ns, heldPod);
    await eventually(
      `the cell of ${held.node} terminating`,
      async () => (await readPage(page)).cells[held.node]?.state === 'terminating',
      { timeoutMs: 90_000 },
    );
    const termShot = artefactPath('dashboard-terminating.png');
    await page.screenshot({ path: termShot, fullPage: true });
    t.diagnostic(`screenshot (terminating): ${termShot}`);

    // Now the hooks and finalizers are released as they come, and the rollout runs to the partition.
    const releaser = new Releaser(f.ns, name);
    t.after(() => releaser.stop());
    const want = layout(updatable, v2, layout([outside, kept], v1));
    await waitLayout(f.ns, name, want, 180_000);
    const last = await eventually(
      'the page to show the rollout done up to the boundaries',
      async () => {
        const s = await readPage(page);
        const ok = f.nodes.every(
          (n) => s.cells[n]?.hash === want[n] && s.cells[n]?.state === 'available' && !!s.cells[n]?.revision,
        );
        return (
          ok && count(s, 'new') === updatable.length && s.updated[`${f.ns}/${name}`] === String(updatable.length) && s
        );
      },
      { timeoutMs: 60_000 },
    );
    await releaser.stop();
    const samples = await sampler.stop();
    assert.deepEqual(
      Object.fromEntries(f.nodes.map((n) => [n, `${last.cells[n]!.revision}/${last.cells[n]!.hold}`])),
      {
        [outside]: 'old/selector',
        [kept]: 'old/partition',
        ...Object.fromEntries(updatable.map((n) => [n, 'new/'])),
      },
      'after the rollout: the updatable nodes are new, the other two kept, each with its reason',
    );

    // Monotonic, sampled throughout: the new count never falls, the old count never rises, and no cell goes back.
    const series = samples.filter((s) => s.updateRevision === v2 && Object.keys(s.cells).length > 0);
    assert.ok(series.length > 5, `the page was read during the rollout (${series.length} samples)`);
    for (let i = 1; i < series.length; i++) {
      const [a, b] = [series[i - 1]!, series[i]!];
      assert.ok(count(b, 'new') >= count(a, 'new'), `new cells fell from ${count(a, 'new')} to ${count(b, 'new')}`);
      assert.ok(count(b, 'old') <= count(a, 'old'), `old cells rose from ${count(a, 'old')} to ${count(b, 'old')}`);
      for (const n of f.nodes)
        assert.ok(
          !(a.cells[n]?.revision === 'new' && b.cells[n]?.revision !== 'new'),
          `${n} went back from new to ${b.cells[n]?.revision}`,
        );
    }
    const newCounts = [...new Set(series.map((s) => count(s, 'new')))];
    assert.ok(
      newCounts.length >= 3,
      `the page showed the rollout progress, not only its end (new-cell counts seen: ${newCounts.join(', ')})`,
    );
    const statesSeen = new Set(series.flatMap((s) => Object.values(s.cells).map((c) => c.state)));
    for (const st of ['preparing-delete', 'terminating', 'available'])
      assert.ok(statesSeen.has(st), `state ${st} seen during the rollout: ${[...statesSeen].join(', ')}`);

    // The DaemonSet's events: the deletion of the pod that was held.
    const withEvents = await eventually(
      `a SuccessfulDelete event for ${heldPod.metadata.name}`,
      async () => {
        const s = await readPage(page);
        return s.events.some((e) => e.reason === 'SuccessfulDelete' && e.message.includes(heldPod.metadata.name)) && s;
      },
      { timeoutMs: 60_000 },
    );
    assert.ok(withEvents.events.length >= 6 + updatable.length, `events listed: ${withEvents.events.length}`);
    assert.deepEqual(pageErrors, [], 'no script error in the page');

    const shot = artefactPath('dashboard-rolled-out.png');
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot (rolled out to the boundaries): ${shot}`);
    process.stdout.write(`dashboard screenshots: ${midShot} ${termShot} ${shot}\n`);
    await page.close();

    // Ctrl-C ends it cleanly.
    assert.equal(await dashboard.stop(), 0, `kubectl ads dashboard exit code on SIGINT; output: ${dashboard.output}`);
  });
});

describe('the dashboard page at 1,000 nodes', { timeout: 180_000 }, () => {
  test('renders one cell per node and follows each pushed change', async (t) => {
    const ds = newDaemonSet({ strategy: 'RollingUpdate', rollingUpdate: { partition: 100 } });
    Object.assign(ds.status!, { daemonSetHash: 'v2', desiredNumberScheduled: 1000, observedGeneration: 1 });
    const nodes = Array.from({ length: 1000 }, (_, i) => newNode(`node-${String(i).padStart(4, '0')}`));
    /** The view with the `updated` highest-named nodes on v2, the next one in PreparingDelete. */
    const view = (updated: number) => {
      const pods = nodes.map((n, i) => {
        const isNew = i >= 1000 - updated;
        const labels = i === 999 - updated ? { 'lifecycle.apps.kruise.io/state': 'PreparingDelete' } : undefined;
        return newPod(ds, n.metadata.name!, { hash: isNew ? 'v2' : 'v1', ready: true, readySince: T0, labels });
      });
      Object.assign(ds.status!, { updatedNumberScheduled: updated });
      return {
        namespace: 'default',
        name: 'foo',
        synced: true,
        found: true,
        row: daemonSetRow(ds),
        map: nodeMap({ ds, nodes, pods, revisions: [], now: T0 + 60_000 }),
        events: [],
      };
    };
    const source = new StaticSource();
    source.setList({ ...source.listView, daemonSets: [daemonSetRow(ds)] });
    source.setDetail(view(0));
    const app = await createDashboardServer(source, await loadAssets());
    t.after(() => app.close());
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/#/default/foo`;
    const browser = await launchBrowser();
    t.after(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(url);
    await eventually('1,000 cells', async () => Object.keys((await readPage(page)).cells).length === 1000, {
      timeoutMs: 30_000,
    });
    const times: number[] = [];
    for (const updated of [200, 400, 600, 800, 900]) {
      const t0 = performance.now();
      const v = view(updated);
      source.setList({ ...source.listView, daemonSets: [v.row] });
      source.setDetail(v);
      await eventually(
        `${updated} new cells`,
        async () => {
          const s = await readPage(page);
          return (
            count(s, 'new') === updated &&
            Object.values(s.cells).filter((c) => c.state === 'preparing-delete').length === 1
          );
        },
        { timeoutMs: 30_000, intervalMs: 20 },
      );
      times.push(performance.now() - t0);
    }
    const s = await readPage(page);
    const holds = Object.values(s.cells).filter((c) => c.hold === 'partition').length;
    assert.equal(holds, view(900).map.counts.heldByPartition, 'the partition boundary as the model draws it');
    assert.ok(holds >= 99, `partition 100 keeps the lowest names: ${holds}`);
    // Each change reached the screen (asserted above); how fast is reported, not asserted: timings belong in
    // benchmarks, and a loaded machine stretches them (well under 100 ms each on a quiet one).
    t.diagnostic(`each change on screen after ${times.map((ms) => ms.toFixed(0)).join(', ')} ms`);
    const shot = artefactPath('dashboard-1000-nodes.png');
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot (1,000 nodes): ${shot}`);
    process.stdout.write(`dashboard screenshot at 1,000 nodes: ${shot}\n`);
  });
});
