// e2e of `kubectl ads dashboard`: the real plugin (bin/kubectl-ads) serves the page against the real control plane,
// headless Chromium (Debian's package, installed by e2e/hack/install-chromium.sh; driven by playwright-core) loads it,
// and the assertions read the DOM while a rollout runs on kwok nodes: cells move from the old revision to the new one
// (the counts only ever move one way), the node left out by rollingUpdate.selector and the one kept by the partition
// are marked so, a pod held by a lifecycle preDelete hook shows PreparingDelete, one held by a finalizer shows
// terminating, and the DaemonSet's events appear. A second test feeds the page 1,000 nodes from an in-memory source
// and checks that it keeps up. A third drives the page's actions during a rollout: pause through the button and its
// in-page confirmation (the Paused badge in the page, rollingUpdate.paused on the object, Progressing=Unknown Paused from
// the controller), resume, a partition step, undo, the per-zone breakdown and the revisions; and, for an identity
// that may only read, the apiserver's Forbidden shown in the page. Screenshots are kept as test artefacts
// (e2e/lib/artefacts.ts); their paths are printed.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from '../cluster/binaries.ts';
import { clientKubeconfig } from '../cluster/cluster.ts';
import { artefactPath } from '../lib/artefacts.ts';
import { apply, eventually, kubectl, kubeconfig, patchPod, uniqueName, type PodJson } from '../lib/kube.ts';
import { adsPods, condition, getAds, imagePatch, patchAds, type AdsJson } from '../lib/ads.ts';
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

/** What the detail panel says of the rollout, read from its data-* attributes. */
interface RolloutDom {
  state: string;
  rowState: string;
  badges: string[];
  progress: string;
  progressing: string;
  message: string;
  updateRevision: string;
  newCells: number;
  timeline: { kind: string; text: string }[];
  groups: Record<string, Record<string, string>>;
  revisions: { number: string; update: string; undo: string; text: string }[];
  result: { state: string; status: string; message: string } | undefined;
}

const READ_ROLLOUT = `(() => {
  const detail = document.querySelector('[data-detail]');
  const row = detail && document.querySelector('tr[data-ds="' + detail.getAttribute('data-detail') + '"]');
  const text = (el) => (el ? el.textContent.replace(/\\s+/g, ' ').trim() : '');
  const groups = {};
  for (const tr of document.querySelectorAll('[data-groups] tr[data-group]')) {
    const cols = {};
    for (const td of tr.querySelectorAll('[data-col]')) cols[td.getAttribute('data-col')] = td.textContent.trim();
    groups[tr.getAttribute('data-group')] = cols;
  }
  const result = document.querySelector('[data-action-result]');
  return {
    state: detail ? detail.getAttribute('data-state') || '' : '',
    rowState: row ? row.getAttribute('data-state') || '' : '',
    badges: [...document.querySelectorAll('[data-detail-badges] [data-badge]')].map((b) => b.getAttribute('data-badge')),
    progress: (detail && detail.querySelector('[data-progress]')) ? detail.querySelector('[data-progress]').getAttribute('data-progress') : '',
    progressing: (document.querySelector('[data-progressing]') || { getAttribute: () => '' }).getAttribute('data-progressing') || '',
    message: text(document.querySelector('[data-rollout-message]')),
    updateRevision: detail ? detail.getAttribute('data-update-revision') || '' : '',
    newCells: document.querySelectorAll('[data-grid] [data-revision="new"]').length,
    timeline: [...document.querySelectorAll('[data-timeline] [data-timeline-kind]')].map((li) => ({
      kind: li.getAttribute('data-timeline-kind'),
      text: text(li.querySelector('.msg')),
    })),
    groups,
    revisions: [...document.querySelectorAll('[data-revisions] [data-revision-number]')].map((tr) => ({
      number: tr.getAttribute('data-revision-number'),
      update: tr.getAttribute('data-update'),
      undo: tr.getAttribute('data-undo'),
      text: text(tr),
    })),
    result: result
      ? {
          state: result.getAttribute('data-action-result'),
          status: result.getAttribute('data-status') || '',
          message: text(result.querySelector('[data-action-message]')),
        }
      : undefined,
  };
})()`;

const readRollout = (page: Page) => page.evaluate(READ_ROLLOUT) as Promise<RolloutDom>;

/** Clicks an action's button, then the confirmation dialog's OK; resolves with the result line once it is there. */
async function act(page: Page, action: string, input?: { selector: string; value: string }): Promise<RolloutDom> {
  if (input) await page.fill(input.selector, input.value);
  await page.click(`[data-action="${action}"]`);
  await page.waitForSelector(`[data-confirm="${action}"]`, { timeout: 10_000 });
  await page.click('[data-confirm-ok]');
  await page.waitForSelector('[data-confirm]', { state: 'detached', timeout: 10_000 });
  return eventually(
    `the answer to ${action} in the page`,
    async () => {
      const s = await readRollout(page);
      return s.result && s.result.state !== 'running' && s;
    },
    { timeoutMs: 30_000 },
  );
}

const ZONE = 'topology.kubernetes.io/zone';

/** spec.updateStrategy.rollingUpdate of the object. */
const rollingUpdate = (ds: AdsJson) =>
  ((ds.spec.updateStrategy as { rollingUpdate?: unknown } | undefined)?.rollingUpdate ?? {}) as {
    paused?: boolean;
    partition?: number | string;
  };

describe('kubectl ads dashboard: actions during a rollout', { timeout: 600_000 }, () => {
  // Six nodes in two zones; partition 2 keeps the two lowest names (zone z-a) on the old revision.
  const f = fixture('dact', 6, (i): Record<string, string> => ({ [ZONE]: i < 3 ? 'z-a' : 'z-b' }));
  const name = 'dact';
  let browser: Browser | undefined;
  const dashboards: DashboardProcess[] = [];
  const cleanup: (() => Promise<unknown>)[] = [];
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    for (const d of dashboards) await d.stop();
    for (const c of cleanup) await c().catch(() => undefined);
  });

  test('pause with its confirmation, resume, partition step and undo from the page; the cluster follows', async (t) => {
    const { hash: v1 } = await rolledOutDaemonSet(f, name, {
      options: {
        // minReadySeconds: each node takes a few seconds, so the rollout is still running when the page pauses it.
        minReadySeconds: 4,
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, partition: 2 } },
      },
    });
    const dashboard = await DashboardProcess.start(['-n', f.ns]);
    dashboards.push(dashboard);
    const page = await browser!.newPage({ viewport: { width: 1280, height: 1000 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${dashboard.url}#/${f.ns}/${name}`);
    await eventually(
      'the page to show the rolled-out DaemonSet as complete',
      async () => {
        const s = await readRollout(page);
        return s.state === 'complete' && s.rowState === 'complete' && s.updateRevision === v1 && s.newCells === 6;
      },
      { timeoutMs: 60_000 },
    );
    // Per zone: three nodes each, all on the update revision.
    const zones = (await readRollout(page)).groups;
    assert.deepEqual(Object.fromEntries(Object.entries(zones).map(([z, c]) => [z, `${c.nodes} nodes ${c.new} new`])), {
      'z-a': '3 nodes 3 new',
      'z-b': '3 nodes 3 new',
    });

    // The rollout starts; the progress counts against the 4 nodes partition 2 allows, not the 6 desired.
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const started = await eventually(
      'the rollout under way in the page',
      async () => {
        const s = await readRollout(page);
        return s.updateRevision !== v1 && s.state === 'progressing' && s.newCells < 4 && s;
      },
      { timeoutMs: 60_000 },
    );
    const v2 = started.updateRevision;
    assert.match(started.progress, /^[0-3] \/ 4 allowed \(of 6\)$/, 'progress against the allowed target');
    assert.ok(started.badges.includes('held-partition'), `held by partition badge: ${started.badges.join(', ')}`);

    // Cancel in the dialog changes nothing.
    await page.click('[data-action="pause"]');
    await page.waitForSelector('[data-confirm="pause"]');
    await page.click('[data-confirm-cancel]');
    await page.waitForSelector('[data-confirm]', { state: 'detached' });
    assert.notEqual(rollingUpdate(await getAds(f.ns, name)).paused, true, 'cancel wrote nothing');

    // Pause: the button, the confirmation, kubectl ads's answer; the Paused badge in the page and the field on the object.
    const paused = await act(page, 'pause');
    assert.deepEqual(paused.result, {
      state: 'ok',
      status: '200',
      message: `daemonset.apps.kruise.io/${name} paused`,
    });
    assert.equal(rollingUpdate(await getAds(f.ns, name)).paused, true, 'the object is paused');
    const held = await eventually(
      'the page to show Paused, and the controller to stop (Progressing=Unknown Paused)',
      async () => {
        const s = await readRollout(page);
        return (
          s.state === 'paused' &&
          s.rowState === 'paused' &&
          s.badges[0] === 'paused' &&
          s.progressing === 'Unknown/Paused' &&
          s
        );
      },
      { timeoutMs: 90_000 },
    );
    const ds = await getAds(f.ns, name);
    assert.equal(condition(ds, 'Progressing')?.reason, 'Paused', 'the page shows the condition the object has');
    assert.ok(
      held.timeline.some((e) => e.kind === 'spec' && e.text === 'rollingUpdate.paused set: rollout paused'),
      `the pause in the timeline: ${JSON.stringify(held.timeline)}`,
    );
    assert.ok(held.newCells < 4, `paused mid-rollout (${held.newCells} of 4 allowed nodes updated)`);
    // Held still: no node moves while paused.
    await sleep(6000);
    assert.equal((await readRollout(page)).newCells, held.newCells, 'no node updated while paused');
    const shot = artefactPath('dashboard-actions-paused.png');
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot (paused mid-rollout, with its actions): ${shot}`);
    process.stdout.write(`dashboard screenshot mid-rollout with actions: ${shot}\n`);

    // Resume: the rollout goes on to the partition; the page says partition reached, 4 of the 4 allowed.
    const resumed = await act(page, 'resume');
    assert.equal(resumed.result?.message, `daemonset.apps.kruise.io/${name} resumed`);
    assert.notEqual(rollingUpdate(await getAds(f.ns, name)).paused, true);
    const moving = await eventually(
      'the rollout to move again after resume',
      async () => {
        const s = await readRollout(page);
        return s.newCells > held.newCells && s.state !== 'paused' && !s.badges.includes('paused') && s;
      },
      { timeoutMs: 90_000 },
    );
    assert.ok(
      moving.timeline.some((e) => e.text === 'rollingUpdate.paused cleared: rollout resumed'),
      'the resume in the timeline',
    );
    const movingShot = artefactPath('dashboard-actions-resumed.png');
    await page.screenshot({ path: movingShot, fullPage: true });
    t.diagnostic(`screenshot (resumed, rolling on): ${movingShot}`);
    process.stdout.write(`dashboard screenshot after resume: ${movingShot}\n`);
    await waitLayout(f.ns, name, layout(f.nodes.slice(2), v2, layout(f.nodes.slice(0, 2), v1)), 180_000);
    const reached = await eventually(
      'the page to show the partition reached',
      async () => {
        const s = await readRollout(page);
        return s.state === 'held' && s.progress === '4 / 4 allowed (of 6)' && s;
      },
      { timeoutMs: 60_000 },
    );
    assert.equal(reached.message, 'partitioned roll out complete: 4 new pods have been updated...');
    assert.equal(reached.rowState, 'held', 'the table says what the detail says');

    // Partition step (by 1, the default): one more node, the CLI's message.
    const stepped = await act(page, 'partition-step', { selector: '[data-step-input]', value: '1' });
    assert.equal(stepped.result?.message, `daemonset.apps.kruise.io/${name} partition set to 1 (was 2)`);
    assert.equal(rollingUpdate(await getAds(f.ns, name)).partition, 1);
    const five = await eventually(
      'the page to show 5 of the 5 allowed nodes updated',
      async () => {
        const s = await readRollout(page);
        return s.state === 'held' && s.progress === '5 / 5 allowed (of 6)' && s;
      },
      { timeoutMs: 90_000 },
    );
    assert.deepEqual(
      Object.fromEntries(Object.entries(five.groups).map(([z, c]) => [z, `${c.new} new ${c.old} old ${c.held} held`])),
      { 'z-a': '2 new 1 old 1 held', 'z-b': '3 new 0 old 0 held' },
      'per zone',
    );
    assert.ok(five.timeline.some((e) => e.kind === 'spec' && e.text === 'partition 2 → 1'));
    assert.ok(five.timeline.some((e) => e.kind === 'revision' && e.text === `update revision ${v1} → ${v2}`));

    // A bad partition from the page is refused (400) with the CLI's words; nothing written.
    const bad = await act(page, 'partition', { selector: '[data-partition-input]', value: 'abc' });
    assert.deepEqual(bad.result && { state: bad.result.state, status: bad.result.status }, {
      state: 'error',
      status: '400',
    });
    assert.match(bad.result!.message, /invalid partition "abc"/);

    // Revisions: the update revision, and undo's target with its image.
    assert.deepEqual(
      five.revisions.map((r) => `${r.number} update=${r.update} undo=${r.undo}`),
      ['2 update=true undo=false', '1 update=false undo=true'],
    );
    assert.match(five.revisions[1]!.text, /c=busybox:1\.36/);
    const undone = await act(page, 'undo');
    assert.equal(undone.result?.message, `daemonset.apps.kruise.io/${name} rolled back`);
    const back = await getAds(f.ns, name);
    assert.equal(
      (back.spec.template as { spec: { containers: { image: string }[] } }).spec.containers[0]!.image,
      'busybox:1.36',
    );
    await eventually('the page to show revision 1 as the update revision again', async () => {
      const s = await readRollout(page);
      return s.updateRevision === v1;
    });

    // Over HTTP: a POST without the token is refused, a GET changes nothing; the headers are on both.
    const url = `${dashboard.url}api/daemonsets/${f.ns}/${name}/actions/pause`;
    const noToken = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(noToken.status, 403);
    assert.equal(noToken.headers.get('x-frame-options'), 'DENY');
    const get = await fetch(url);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('x-content-type-options'), 'nosniff');
    assert.notEqual(rollingUpdate(await getAds(f.ns, name)).paused, true);
    assert.deepEqual(pageErrors, [], 'no script error in the page');
    await page.close();
  });

  test("an identity that may only read: the apiserver's Forbidden shows in the page, nothing changes", async (t) => {
    const user = uniqueName('ads-dash-viewer');
    const dir = process.env.ADS_E2E_CLUSTER_DIR || dirname(kubeconfig());
    const viewer = await clientKubeconfig(dir, user, []);
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: user, namespace: f.ns },
      rules: [
        { apiGroups: ['apps.kruise.io'], resources: ['daemonsets'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['pods', 'events'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['apps'], resources: ['controllerrevisions'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: user, namespace: f.ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: user },
      rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] }],
    });
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: user },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    cleanup.push(() => kubectl(['delete', 'clusterrole,clusterrolebinding', user, '--ignore-not-found']));
    const pausedBefore = rollingUpdate(await getAds(f.ns, name)).paused;
    // RBAC caches the new bindings for a moment: the start is retried until the viewer can list.
    const dashboard = await eventually(
      'the dashboard to start as the viewer',
      async () => DashboardProcess.start(['-n', f.ns, '--kubeconfig', viewer]).catch(() => false as const),
      { timeoutMs: 60_000 },
    );
    dashboards.push(dashboard);
    const page = await browser!.newPage({ viewport: { width: 1280, height: 1000 } });
    await page.goto(`${dashboard.url}#/${f.ns}/${name}`);
    await eventually('the page to show the DaemonSet', async () => (await readRollout(page)).state !== '', {
      timeoutMs: 60_000,
    });
    const out = await act(page, pausedBefore === true ? 'resume' : 'pause');
    assert.equal(out.result?.state, 'error');
    assert.equal(out.result?.status, '403');
    assert.match(
      out.result!.message,
      new RegExp(
        `^Error from server \\(Forbidden\\): daemonsets\\.apps\\.kruise\\.io "${name}" is forbidden: User "${user}" cannot patch resource "daemonsets" in API group "apps\\.kruise\\.io" in the namespace "${f.ns}"`,
      ),
    );
    assert.doesNotMatch(out.result!.message, /\bat .*\.ts:\d+/, 'no stack trace');
    assert.equal(rollingUpdate(await getAds(f.ns, name)).paused, pausedBefore, 'nothing changed');
    const shot = artefactPath('dashboard-forbidden.png');
    await page.screenshot({ path: shot, fullPage: false });
    t.diagnostic(`screenshot (Forbidden): ${shot}`);
    await page.close();
  });
});
