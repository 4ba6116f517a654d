// e2e of the `kubectl ads` plugin as a user runs it: bin/kubectl-ads (and once through kubectl's plugin lookup, and
// once as the packed npm package installed offline into a temporary prefix) against the real control plane, on an
// Advanced DaemonSet rolling out over kwok nodes with the harness's manager as its controller. Every command and its
// exit codes: get, status (0 done, 2 timeout, 1 failed), pause/resume (and the no-ops), partition N, N%, --step,
// restart, history (--revision, --diff), undo (--to-revision), pods, canary, completion; and the errors: a missing
// object, a name that is an apps/v1 DaemonSet, a 403 from a restricted identity.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot, binaries } from '../cluster/binaries.ts';
import { clientKubeconfig } from '../cluster/cluster.ts';
import { apply, eventually, fixture, kubeconfig, kubectl, podReady } from '../lib/kube.ts';
import { adsManifest, adsPods, getAds, hashOf, imagePatch, patchAds, waitRolledOut, type AdsJson } from '../lib/ads.ts';
import { AdsWatch, CRASHLOOP_IMAGE, containerStatus } from '../canary/lib.ts';

const run = promisify(execFile);
const BIN = join(repoRoot, 'bin');
const PLUGIN = join(BIN, 'kubectl-ads');

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs an executable to its end; a non-zero exit is a result, not a throw. */
async function exec(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> {
  try {
    const { stdout, stderr } = await run(file, args, {
      env: { ...process.env, KUBECONFIG: kubeconfig(), ...env },
      maxBuffer: 16 * 1024 * 1024,
      timeout: 300_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string; message: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const ads = (args: string[], env?: NodeJS.ProcessEnv) => exec(PLUGIN, args, env);

/** `kubectl ads ...` that must succeed: its stdout. */
async function adsOk(args: string[]): Promise<string> {
  const r = await ads(args);
  assert.equal(r.code, 0, `kubectl ads ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** The table printed by get/pods/history as rows of cells (split on runs of 2+ spaces). */
const table = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s{2,}/));

const rollingUpdate = (ds: AdsJson) =>
  (ds.spec.updateStrategy as { rollingUpdate?: { paused?: boolean; partition?: unknown } }).rollingUpdate ?? {};
const templateAnnotations = (ds: AdsJson) =>
  (ds.spec.template as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations ?? {};

const image = async (ns: string, name: string) =>
  ((await getAds(ns, name)).spec.template.spec.containers as { image: string }[])[0]?.image;

describe('kubectl ads', { timeout: 900_000 }, () => {
  const f = fixture('plugin', 4);
  const name = 'agent';
  const n = () => ['-n', f.ns];

  before(async () => {
    await apply(
      adsManifest({
        name,
        namespace: f.ns,
        group: f.group,
        image: 'busybox:1.36',
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } },
      }),
    );
  });

  test("status waits for the first rollout and exits 0 with kubectl's message", async () => {
    const r = await ads(['status', name, ...n(), '--timeout', '180s']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /daemon set "agent" successfully rolled out\n$/);
    // Not a terminal: plain lines only, no redraw escapes.
    assert.ok(!r.stdout.includes('\x1b['), 'no escape sequences');
  });

  test('get: the table, one name, -o json|yaml|wide|name, -A, and an empty namespace', async () => {
    const ds = await waitRolledOut(f.ns, name, 4);
    const hash = ds.status!.daemonSetHash!;
    const rows = table(await adsOk(['get', ...n()]));
    assert.deepEqual(rows[0], [
      'NAME',
      'DESIRED',
      'UPDATED',
      'READY',
      'AVAILABLE',
      'REVISION',
      'STRATEGY',
      'CANARY',
      'AGE',
    ]);
    assert.deepEqual(rows[1]?.slice(0, 8), [name, '4', '4', '4', '4', hash, 'Standard', '-']);
    assert.match(rows[1]?.[8] ?? '', /^\d+(s|m\d*s?)$/);
    assert.deepEqual(table(await adsOk(['get', name, ...n()]))[1]?.[0], name);

    const json = JSON.parse(await adsOk(['get', name, ...n(), '-o', 'json'])) as {
      kind: string;
      metadata: { uid: string };
    };
    assert.equal(json.kind, 'DaemonSet');
    assert.equal(json.metadata.uid, ds.metadata.uid);
    const list = JSON.parse(await adsOk(['get', ...n(), '-o', 'json'])) as { kind: string; items: { kind: string }[] };
    assert.equal(list.kind, 'List');
    assert.deepEqual(
      list.items.map((i) => i.kind),
      ['DaemonSet'],
    );
    assert.match(
      await adsOk(['get', name, ...n(), '-o', 'yaml']),
      /^apiVersion: apps\.kruise\.io\/v1alpha1\nkind: DaemonSet\n/,
    );
    const wide = table(await adsOk(['get', ...n(), '-o', 'wide']));
    assert.deepEqual(wide[0]?.slice(-4), ['CURRENT', 'CONTAINERS', 'IMAGES', 'SELECTOR']);
    assert.deepEqual(wide[1]?.slice(-4), ['4', 'c', 'busybox:1.36', `app=${name}`]);
    assert.equal(await adsOk(['get', ...n(), '-o', 'name']), `daemonset.apps.kruise.io/${name}\n`);
    const all = table(await adsOk(['get', '-A']));
    assert.equal(all[0]?.[0], 'NAMESPACE');
    assert.ok(
      all.some((r) => r[0] === f.ns && r[1] === name),
      'our DaemonSet in the -A list',
    );

    const empty = await ads(['get', '-n', 'default']);
    assert.equal(empty.code, 0);
    assert.equal(empty.stdout, '');
    assert.equal(empty.stderr, 'No resources found in default namespace.\n');
  });

  test('pods: one row per node with revision, readiness and lifecycle state', async () => {
    const hash = (await getAds(f.ns, name)).status!.daemonSetHash!;
    const rows = table(await adsOk(['pods', name, ...n()]));
    assert.deepEqual(rows[0], [
      'NODE',
      'POD',
      'REVISION',
      'UPDATED',
      'READY',
      'STATUS',
      'LIFECYCLE',
      'IN-PLACE',
      'RESOURCES',
      'RESTARTS',
      'AGE',
    ]);
    assert.deepEqual(
      rows.slice(1).map((r) => r[0]),
      f.nodes,
    );
    for (const r of rows.slice(1)) {
      assert.deepEqual(
        [r[2], r[3], r[4], r[5], r[7], r[8], r[9]],
        [hash, 'true', '1/1', 'Running', '-', 'template', '0'],
        r.join(' '),
      );
      assert.ok(r[6] === 'Normal' || r[6] === '-', `lifecycle state ${r[6]}`);
    }
  });

  test('pause (and again: already paused), a held rollout: status --timeout exits 2, --watch=false exits 0; restart refused while paused', async () => {
    assert.equal(await adsOk(['pause', name, ...n()]), `daemonset.apps.kruise.io/${name} paused\n`);
    assert.equal(rollingUpdate(await getAds(f.ns, name)).paused, true);
    assert.equal(await adsOk(['pause', name, ...n()]), `daemonset.apps.kruise.io/${name} already paused\n`);
    const oldHash = (await getAds(f.ns, name)).status!.daemonSetHash!;
    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const timedOut = await ads(['status', name, ...n(), '--timeout', '5s']);
    assert.equal(timedOut.code, 2, `${timedOut.stdout}${timedOut.stderr}`);
    assert.equal(timedOut.stderr, 'error: timed out waiting for the condition\n');
    assert.match(
      timedOut.stdout,
      /0 out of 4 new pods have been updated \(paused: resume with "kubectl ads resume agent"\)\.\.\.\n$/,
    );
    const once = await ads(['status', name, ...n(), '--watch=false']);
    assert.equal(once.code, 0);
    assert.match(
      once.stdout,
      /^(Waiting for daemon set spec update to be observed|Waiting for daemon set "agent" rollout to finish: 0 out of 4)/,
    );
    // On a terminal (a pty from script(1)): the frame with the progress bar and the node × revision map.
    const newHash = await eventually('the new revision observed', async () => {
      const ds = await getAds(f.ns, name);
      const s = ds.status;
      return s && s.observedGeneration === ds.metadata.generation && s.daemonSetHash !== oldHash
        ? s.daemonSetHash
        : undefined;
    });
    const tty = await exec('script', ['-qefc', `${PLUGIN} status ${name} -n ${f.ns} --timeout 4s`, '/dev/null']);
    assert.equal(tty.code, 2, tty.stdout);
    const screen = tty.stdout.replace(/\r/g, '');
    const labels = Math.max(newHash.length + 9, oldHash.length, 8);
    assert.ok(
      screen.includes(
        [
          'Waiting for daemon set "agent" rollout to finish: 0 out of 4 new pods have been updated (paused: resume with "kubectl ads resume agent")...',
          `[${'░'.repeat(40)}]   0%  0/4 updated, 4/4 available`,
          `${`${newHash} (update)`.padEnd(labels)}  0  ····`,
          `${oldHash.padEnd(labels)}  4  ●●●●`,
          '● ready  ○ not ready  ◌ terminating  · none (one column per node, by name)',
          'error: timed out waiting for the condition',
        ].join('\n'),
      ),
      screen,
    );
    const restart = await ads(['restart', name, ...n()]);
    assert.equal(restart.code, 1);
    assert.equal(
      restart.stderr,
      `error: can't restart paused daemonset.apps.kruise.io/${name} (run "kubectl ads resume ${name}" first)\n`,
    );
  });

  test('resume (and again: already resumed); status then completes', async () => {
    assert.equal(await adsOk(['resume', name, ...n()]), `daemonset.apps.kruise.io/${name} resumed\n`);
    assert.equal(await adsOk(['resume', name, ...n()]), `daemonset.apps.kruise.io/${name} already resumed\n`);
    // kwok pods start at once: the rollout may be over before status looks. Each state seen is one plain line.
    const r = await ads(['status', name, ...n(), '--timeout', '180s']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.pop(), 'daemon set "agent" successfully rolled out');
    for (const l of lines)
      assert.match(l, /^Waiting for daemon set "agent" rollout to finish: \d (out of|of) 4 .*\.\.\.$/);
    lines.forEach((l, i) => assert.notEqual(l, lines[i - 1], 'a line per change of state, not per event'));
    assert.equal((await waitRolledOut(f.ns, name, 4)).status?.updatedNumberScheduled, 4);
  });

  test('partition N (and again: already), N%, --step K: status completes at each partitioned step', async () => {
    assert.equal(
      await adsOk(['partition', name, '3', ...n()]),
      `daemonset.apps.kruise.io/${name} partition set to 3 (was 0)\n`,
    );
    assert.equal(
      await adsOk(['partition', name, '3', ...n()]),
      `daemonset.apps.kruise.io/${name} partition already 3\n`,
    );
    await patchAds(f.ns, name, imagePatch('busybox:1.38'));
    const partitioned = (updated: number) =>
      new RegExp(`partitioned roll out complete: ${updated} new pods have been updated\\.\\.\\.\\n$`);
    const status = async (updated: number) => {
      const r = await ads(['status', name, ...n(), '--timeout', '180s']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, partitioned(updated));
      const ds = await getAds(f.ns, name);
      assert.equal(ds.status?.updatedNumberScheduled, updated, 'status agrees with the plugin');
    };
    await status(1);
    assert.equal(
      await adsOk(['partition', name, '50%', ...n()]),
      `daemonset.apps.kruise.io/${name} partition set to 50% (was 3)\n`,
    );
    await status(2);
    assert.equal(
      await adsOk(['partition', name, '--step', '1', ...n()]),
      `daemonset.apps.kruise.io/${name} partition set to 1 (was 50% = 2 of 4 nodes)\n`,
    );
    assert.equal(rollingUpdate(await getAds(f.ns, name)).partition, 1);
    await status(3);
    assert.equal(
      await adsOk(['partition', name, '--step', '5', ...n()]),
      `daemonset.apps.kruise.io/${name} partition set to 0 (was 1)\n`,
    );
    const done = await ads(['status', name, ...n(), '--timeout', '180s']);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /daemon set "agent" successfully rolled out\n$/);
    assert.equal(
      await adsOk(['partition', name, '--step', '1', ...n()]),
      `daemonset.apps.kruise.io/${name} partition already 0\n`,
    );
    const bad = await ads(['partition', name, '150%', ...n()]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: invalid partition "150%"/);
    // A negative number is a value refused as such, not a shorthand flag.
    const negative = await ads(['partition', name, '-1', ...n()]);
    assert.equal(negative.code, 1);
    assert.equal(negative.stderr, 'error: invalid partition "-1": want a non-negative integer (nodes) or a percentage 0%-100%\n'); // prettier-ignore
    // Above the node count: set, with a warning.
    const above = await ads(['partition', name, '7', ...n()]);
    assert.equal(above.code, 0, above.stderr);
    assert.equal(above.stdout, `daemonset.apps.kruise.io/${name} partition set to 7 (was 0)\n`);
    assert.equal(above.stderr, 'warning: partition 7 is above the 4 nodes that should run this DaemonSet: every node stays on its revision\n'); // prettier-ignore
    assert.equal(await adsOk(['partition', name, '0', ...n()]), `daemonset.apps.kruise.io/${name} partition set to 0 (was 7)\n`); // prettier-ignore
  });

  test('restart: restartedAt on the template, a new revision rolled out', async () => {
    const before = (await waitRolledOut(f.ns, name, 4)).status!.daemonSetHash!;
    assert.equal(await adsOk(['restart', name, ...n()]), `daemonset.apps.kruise.io/${name} restarted\n`);
    const at = templateAnnotations(await getAds(f.ns, name))['kubectl.kubernetes.io/restartedAt'];
    assert.match(at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/);
    assert.equal((await ads(['status', name, ...n(), '--timeout', '180s'])).code, 0);
    assert.notEqual((await waitRolledOut(f.ns, name, 4)).status!.daemonSetHash, before);
  });

  test("history: the revisions, one revision's template, a diff of two", async () => {
    const out = await adsOk(['history', name, ...n()]);
    const [head, ...rest] = out.trim().split('\n');
    assert.equal(head, `daemonset.apps.kruise.io/${name}`);
    const rows = table(rest.join('\n'));
    assert.deepEqual(rows[0], ['REVISION', 'HASH', 'CHANGE-CAUSE']);
    assert.deepEqual(
      rows.slice(1).map((r) => r[0]),
      ['1', '2', '3', '4'],
      '1.36, 1.37, 1.38, restarted',
    );
    assert.ok(rows.slice(1).every((r) => r[2] === '<none>'));
    const one = await adsOk(['history', name, ...n(), '--revision', '1']);
    assert.ok(
      one.startsWith(
        'daemonset.apps.kruise.io/agent with revision #1\nPod Template:\n  Labels:\tapp=agent\n  Containers:\n   c:\n    Image:\tbusybox:1.36\n',
      ),
      one,
    );
    const diff = await adsOk(['history', name, ...n(), '--revision', '2', '--diff', '1']);
    assert.match(diff, /^--- revision 1\n\+\+\+ revision 2\n@@ /);
    assert.match(diff, /\n-\s+- image: busybox:1\.36\n\+\s+- image: busybox:1\.37\n/);
    const toCurrent = await adsOk(['history', name, ...n(), '--diff', '3']);
    assert.match(toCurrent, /\+\+\+ current template\n[\s\S]*\n\+\s+kubectl\.kubernetes\.io\/restartedAt: /);
    const missing = await ads(['history', name, ...n(), '--revision', '42']);
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'error: unable to find the specified revision\n');
  });

  test('undo: to the previous revision, --to-revision N, skipped when already there, unknown revision', async () => {
    // Revision 3 (1.38, before the restart) is the previous one.
    assert.equal(await adsOk(['undo', name, ...n()]), `daemonset.apps.kruise.io/${name} rolled back\n`);
    assert.equal(await image(f.ns, name), 'busybox:1.38');
    assert.equal(
      templateAnnotations(await getAds(f.ns, name))['kubectl.kubernetes.io/restartedAt'],
      undefined,
      'the whole template is restored, the restart annotation with it',
    );
    assert.equal((await ads(['status', name, ...n(), '--timeout', '180s'])).code, 0);
    // The controller renumbers the revision it reuses: 3 becomes 5.
    const rows = await eventually('revision 3 renumbered to 5', async () => {
      const r = table((await adsOk(['history', name, ...n()])).trim().split('\n').slice(1).join('\n'));
      return (
        r
          .slice(1)
          .map((x) => x[0])
          .join(',') === '1,2,4,5' && r
      );
    });
    assert.equal(rows.length, 5);

    assert.equal(
      await adsOk(['undo', name, ...n(), '--to-revision', '1']),
      `daemonset.apps.kruise.io/${name} rolled back\n`,
    );
    assert.equal(await image(f.ns, name), 'busybox:1.36');
    assert.equal((await ads(['status', name, ...n(), '--timeout', '180s'])).code, 0);
    const current = await eventually('revision 1 renumbered to 6', async () => {
      const r = table((await adsOk(['history', name, ...n()])).trim().split('\n').slice(1).join('\n'));
      return (
        r
          .slice(1)
          .map((x) => x[0])
          .join(',') === '2,4,5,6' && r
      );
    });
    assert.equal(current.length, 5);
    assert.equal(
      await adsOk(['undo', name, ...n(), '--to-revision', '6']),
      `daemonset.apps.kruise.io/${name} skipped rollback (current template already matches revision 6)\n`,
    );
    const unknown = await ads(['undo', name, ...n(), '--to-revision', '1']);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, 'error: unable to find specified revision 1 in history\n');
  });

  test('canary without rollingUpdate.canary: the clear error, exit 1', async () => {
    for (const action of ['promote', 'pause', 'resume', 'fail']) {
      const r = await ads(['canary', action, name, ...n()]);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        `error: ${f.ns}/${name} has no canary: spec.updateStrategy.rollingUpdate.canary is not set\n`,
      );
    }
  });

  test("status of an OnDelete DaemonSet: kubectl's error, exit 1", async () => {
    await apply(
      adsManifest({ name: 'ondelete', namespace: f.ns, group: f.group, updateStrategy: { type: 'OnDelete' } }),
    );
    const r = await ads(['status', 'ondelete', ...n()]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'error: rollout status is only available for RollingUpdate strategy type\n');
  });

  test("a missing object: kubectl's NotFound line, exit 1, for every command", async () => {
    for (const args of [
      ['get', 'nope'],
      ['status', 'nope'],
      ['pause', 'nope'],
      ['history', 'nope'],
      ['pods', 'nope'],
    ]) {
      const r = await ads([...args, ...n()]);
      assert.equal(r.code, 1, args.join(' '));
      assert.equal(r.stderr, 'Error from server (NotFound): daemonsets.apps.kruise.io "nope" not found\n');
    }
  });

  test('a name that is an apps/v1 DaemonSet: said so', async () => {
    await apply({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'native', namespace: f.ns },
      spec: {
        selector: { matchLabels: { app: 'native' } },
        template: {
          metadata: { labels: { app: 'native' } },
          spec: { nodeSelector: { 'no-such-node': 'true' }, containers: [{ name: 'c', image: 'busybox:1.36' }] },
        },
      },
    });
    const r = await ads(['pause', 'native', ...n()]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `error: daemonsets.apps.kruise.io "native" not found: "native" in namespace "${f.ns}" is an apps/v1 DaemonSet (daemonset.apps/native), not an Advanced DaemonSet; use "kubectl rollout ... daemonset/native" for it\n`,
    );
  });

  describe('a restricted identity', () => {
    let viewer = '';
    before(async () => {
      const dir = process.env.ADS_E2E_CLUSTER_DIR || dirname(kubeconfig());
      viewer = await clientKubeconfig(dir, 'ads-viewer', []);
      await apply({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'ads-viewer', namespace: f.ns },
        rules: [{ apiGroups: ['apps.kruise.io'], resources: ['daemonsets'], verbs: ['get', 'list', 'watch'] }],
      });
      await apply({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'ads-viewer', namespace: f.ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ads-viewer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'ads-viewer' }],
      });
    });

    test("reads work; a write is the apiserver's 403 with the missing verb and resource", async () => {
      const got = await eventually('the viewer can read (RBAC caches the binding)', async () => {
        const r = await ads(['--kubeconfig', viewer, 'get', name, ...n()]);
        return r.code === 0 && r;
      });
      assert.equal(table(got.stdout)[1]?.[0], name);
      const r = await ads(['--kubeconfig', viewer, 'pause', name, ...n()]);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        [
          `Error from server (Forbidden): daemonsets.apps.kruise.io "${name}" is forbidden: User "ads-viewer" cannot patch resource "daemonsets" in API group "apps.kruise.io" in the namespace "${f.ns}"`,
          `  missing permission: user "ads-viewer" may not "patch" daemonsets.apps.kruise.io in namespace "${f.ns}".`,
          `  Ask a cluster administrator for a Role granting it; check with: kubectl auth can-i patch daemonsets.apps.kruise.io -n ${f.ns}`,
          '',
        ].join('\n'),
      );
      const pods = await ads(['--kubeconfig', viewer, 'pods', name, ...n()]);
      assert.equal(pods.code, 1);
      assert.match(pods.stderr, /may not "list" pods in namespace/);
    });
  });

  test('completion: scripts, __complete with DaemonSet names, bash, kubectl_complete-ads through kubectl', async () => {
    assert.match(await adsOk(['completion', 'bash']), /\ncomplete -F __kubectl_ads_complete kubectl-ads\n/);
    assert.match(await adsOk(['completion', 'zsh']), /^#compdef kubectl-ads\n/);
    const names = await adsOk(['__complete', 'status', ...n(), '']);
    assert.deepEqual(names.trim().split('\n'), ['agent', 'ondelete', ':4']);
    assert.deepEqual((await adsOk(['__complete', 'pause', ...n(), 'o'])).trim().split('\n'), ['ondelete', ':4']);
    assert.deepEqual((await adsOk(['__complete', 'get', '-o', ''])).trim().split('\n'), [
      'json',
      'yaml',
      'wide',
      'name',
      ':4',
    ]);

    // The bash script, as bash runs it on TAB: `kubectl-ads -n <ns> pause a<TAB>`.
    const script = await adsOk(['completion', 'bash']);
    const bash = await exec('bash', [
      '-c',
      `${script}\nCOMP_WORDS=(${PLUGIN} -n ${f.ns} pause a); COMP_CWORD=4; __kubectl_ads_complete; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ]);
    assert.equal(bash.stdout, 'agent\n', bash.stderr);

    // kubectl (1.26+) finds kubectl-ads on PATH as the `ads` plugin, and completes it through kubectl_complete-ads.
    const path = { PATH: [BIN, dirname(process.execPath), process.env.PATH].join(delimiter) };
    const viaKubectl = await exec(binaries().kubectl, ['__complete', 'ads', 'pause', '-n', f.ns, ''], path);
    assert.deepEqual(viaKubectl.stdout.trim().split('\n'), ['agent', 'ondelete', ':4'], viaKubectl.stderr);
    const plugin = await exec(binaries().kubectl, ['ads', 'get', name, '-n', f.ns], path);
    assert.equal(plugin.code, 0, plugin.stderr);
    assert.equal(table(plugin.stdout)[1]?.[0], name);
  });

  describe('the packed npm package', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ads-plugin-pack-'));
    after(() => rmSync(dir, { recursive: true, force: true }));

    test('npm pack, npm install -g --offline into a temporary prefix (no registry, empty cache), kubectl-ads get', async () => {
      // Node 24 first on PATH: npm's prepack and the installed kubectl-ads run on it (`#!/usr/bin/env node`).
      const env = {
        PATH: [dirname(process.execPath), process.env.PATH].join(delimiter),
        npm_config_update_notifier: 'false',
      };
      const pack = await exec('npm', ['pack', join(repoRoot, 'cmd', 'kubectl-ads'), '--pack-destination', dir], env);
      assert.equal(pack.code, 0, pack.stderr);
      const tgz = join(dir, pack.stdout.trim().split('\n').pop() as string);
      assert.match(tgz, /kubectl-ads-\d+\.\d+\.\d+\.tgz$/);
      const prefix = join(dir, 'prefix');
      const install = await exec(
        'npm',
        [
          'install',
          '-g',
          '--prefix',
          prefix,
          '--offline',
          '--cache',
          join(dir, 'empty-cache'),
          '--no-audit',
          '--no-fund',
          tgz,
        ],
        env,
      );
      assert.equal(install.code, 0, install.stderr);
      const got = await exec(join(prefix, 'bin', 'kubectl-ads'), ['get', ...n()], env);
      assert.equal(got.code, 0, got.stderr);
      const rows = table(got.stdout);
      assert.equal(rows[0]?.[0], 'NAME');
      assert.deepEqual(
        rows.slice(1).map((r) => r[0]),
        ['agent', 'ondelete'],
      );
      const complete = await exec(join(prefix, 'bin', 'kubectl_complete-ads'), ['status', ...n(), 'a'], env);
      assert.deepEqual(complete.stdout.trim().split('\n'), ['agent', ':4']);
      // The install holds only the package: nothing fetched, no node_modules of dependencies.
      const ls = await exec('npm', ['ls', '-g', '--prefix', prefix, '--all', '--parseable'], env);
      assert.equal(
        ls.stdout
          .trim()
          .split('\n')
          .filter((l) => l.includes('node_modules')).length,
        1,
        ls.stdout,
      );
    });
  });
});

describe('kubectl ads on a canary and a progress deadline', { timeout: 600_000 }, () => {
  const f = fixture('plugin-canary', 3);
  const n = () => ['-n', f.ns];
  type Canary = { revision?: string; phase?: string; reason?: string; nodes?: string[] };
  const canary = async (name: string, ok: (c: Canary) => boolean, timeoutMs = 60_000) =>
    eventually(
      `${name}: status.canary`,
      async () => {
        const c = (await getAds(f.ns, name)).status as { canary?: Canary };
        return c?.canary && ok(c.canary) ? c.canary : undefined;
      },
      { timeoutMs },
    );
  const annotationsOf = async (name: string) =>
    ((await getAds(f.ns, name)).metadata as { annotations?: Record<string, string> }).annotations ?? {};

  test('canary pause (and again), resume, promote: the rollout finishes; canary fail: status exits 1', async () => {
    const name = 'canary';
    await apply(
      adsManifest({
        name,
        namespace: f.ns,
        group: f.group,
        image: 'busybox:1.36',
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: { maxUnavailable: 1, canary: { nodes: 1, validation: 'Manual' } },
        },
      }),
    );
    assert.equal((await ads(['status', name, ...n(), '--timeout', '180s'])).code, 0);
    const v1 = (await waitRolledOut(f.ns, name, 3)).status!.daemonSetHash!;

    await patchAds(f.ns, name, imagePatch('busybox:1.37'));
    const observing = await canary(name, (c) => c.phase === 'Observing' && c.revision !== v1);
    const v2 = observing.revision!;
    assert.equal(table(await adsOk(['get', name, ...n()]))[1]?.[7], 'Observing', 'the CANARY column');
    const once = await adsOk(['status', name, ...n(), '--watch=false']);
    assert.ok(
      once.startsWith(`Waiting for daemon set "${name}" canary (Observing on ${observing.nodes?.join(', ')}): `),
      once,
    );

    assert.equal(await adsOk(['canary', 'pause', name, ...n()]), `daemonset.apps.kruise.io/${name} canary paused\n`);
    assert.equal(
      await adsOk(['canary', 'pause', name, ...n()]),
      `daemonset.apps.kruise.io/${name} canary already paused\n`,
    );
    await canary(name, (c) => c.revision === v2 && c.phase === 'Paused');
    assert.equal(
      await adsOk(['canary', 'resume', name, ...n()]),
      `daemonset.apps.kruise.io/${name} canary resumed (revision ${v2})\n`,
    );
    const resumedWith = await annotationsOf(name);
    assert.equal(resumedWith['advanced-daemonset.io/canary-resumed'], v2);
    assert.equal(resumedWith['advanced-daemonset.io/canary-paused'], undefined, 'the pause annotation removed');
    await canary(name, (c) => c.revision === v2 && c.phase === 'Observing');
    assert.equal(
      await adsOk(['canary', 'promote', name, ...n()]),
      `daemonset.apps.kruise.io/${name} canary promoted (revision ${v2})\n`,
    );
    const promoted = await ads(['status', name, ...n(), '--timeout', '180s']);
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.match(promoted.stdout, /daemon set "canary" successfully rolled out\n$/);
    assert.equal((await waitRolledOut(f.ns, name, 3)).status?.daemonSetHash, v2);

    await patchAds(f.ns, name, imagePatch('busybox:1.38'));
    const v3 = (await canary(name, (c) => c.phase === 'Observing' && c.revision !== v2)).revision!;
    assert.equal(
      await adsOk(['canary', 'fail', name, ...n()]),
      `daemonset.apps.kruise.io/${name} canary failed (revision ${v3})\n`,
    );
    assert.equal((await annotationsOf(name))['advanced-daemonset.io/canary-failed'], v3);
    const failed = await ads(['status', name, ...n(), '--timeout', '180s']);
    assert.equal(failed.code, 1, `${failed.stdout}${failed.stderr}`);
    assert.match(failed.stderr, /^error: daemon set "canary" canary failed(: .+)?\n$/);
    assert.equal((await canary(name, (c) => c.revision === v3)).phase, 'Failed');
    assert.equal(
      await adsOk(['canary', 'fail', name, ...n()]),
      `daemonset.apps.kruise.io/${name} canary already failed\n`,
    );
    // A failed canary cannot be promoted: refused with what to do instead, exit 1, nothing written.
    const before = await annotationsOf(name);
    const promote = await ads(['canary', 'promote', name, ...n()]);
    assert.equal(promote.code, 1, promote.stdout);
    assert.match(promote.stderr, new RegExp(`^error: the canary of revision ${v3} failed.*: it cannot be promoted\\. Change the template to start a new canary, or roll back with "kubectl ads undo canary"\\n$`)); // prettier-ignore
    assert.deepEqual(await annotationsOf(name), before);

    // The annotation the plugin left names v3: the next template's canary runs (a bare "true" would fail it at once).
    await patchAds(f.ns, name, imagePatch('busybox:1.39'));
    const v4 = (await canary(name, (c) => c.phase === 'Observing' && c.revision !== v3)).revision!;
    assert.equal((await canary(name, (c) => c.revision === v4)).phase, 'Observing');

    // Removing rollingUpdate.canary after the canary failed: the rollout goes on, and status no longer says failed.
    await adsOk(['canary', 'fail', name, ...n()]);
    await canary(name, (c) => c.revision === v4 && c.phase === 'Failed');
    await patchAds(f.ns, name, { spec: { updateStrategy: { rollingUpdate: { canary: null } } } });
    const done = await ads(['status', name, ...n(), '--timeout', '180s']);
    assert.equal(done.code, 0, `${done.stdout}${done.stderr}`);
    assert.match(done.stdout, /daemon set "canary" successfully rolled out\n$/);
    assert.equal((await waitRolledOut(f.ns, name, 3)).status?.daemonSetHash, v4);
    const ended = await canary(name, (c) => c.revision === v4);
    assert.deepEqual([ended.phase, ended.reason], ['Promoted', 'CanaryRemoved']);
    assert.equal(table(await adsOk(['get', name, ...n()]))[1]?.[7], '-', 'the CANARY column: no canary');
  });

  test('canary resume of a canary autoPause paused: Observing again, autoPause off for that canary', async (t) => {
    const name = 'autopaused';
    await apply(
      adsManifest({
        name,
        namespace: f.ns,
        group: f.group,
        image: 'busybox:1.36',
        updateStrategy: {
          type: 'RollingUpdate',
          rollingUpdate: {
            maxUnavailable: 1,
            canary: {
              nodes: 1,
              autoPause: { enabled: true, maxRestarts: 1 },
              autoFail: { enabled: true, maxRestarts: 1000 },
            },
          },
        },
      }),
    );
    const v1 = (await waitRolledOut(f.ns, name, 3)).status!.daemonSetHash!;
    const watch = new AdsWatch(f.ns, name);
    t.after(() => watch.stop());

    // A crash-looping image (e2e/cluster/kwok-stages.yaml): paused by autoPause after its second restart.
    await patchAds(f.ns, name, imagePatch(CRASHLOOP_IMAGE));
    const paused = await canary(name, (c) => c.phase === 'Paused' && !!c.revision && c.revision !== v1, 120_000);
    const v2 = paused.revision!;
    assert.equal(paused.reason, 'CrashLoopBackOff');
    assert.equal(
      await adsOk(['canary', 'resume', name, ...n()]),
      `daemonset.apps.kruise.io/${name} canary resumed (revision ${v2})\n`,
    );
    assert.equal((await annotationsOf(name))['advanced-daemonset.io/canary-resumed'], v2);
    const resumed = await canary(name, (c) => c.revision === v2 && c.phase === 'Observing');
    assert.equal(resumed.reason, 'Resumed');

    // The canary pod keeps crashing; autoPause, off for this canary, does not pause it again (every version of the
    // object is watched).
    const restarts = async () => {
      let most = 0;
      for (const p of await adsPods(f.ns, name))
        if (hashOf(p) === v2) most = Math.max(most, containerStatus(p, 'c')?.restartCount ?? 0);
      return most;
    };
    const at = await restarts();
    await eventually(`${name}: two more canary restarts`, async () => (await restarts()) >= at + 2, {
      timeoutMs: 120_000,
    });
    assert.equal((await canary(name, (c) => c.revision === v2)).phase, 'Observing');
    assert.deepEqual(await watch.phasesThrough(v2, 'Observing'), ['Observing', 'Paused', 'Observing']);
    assert.equal(
      await adsOk(['canary', 'resume', name, ...n()]),
      `daemonset.apps.kruise.io/${name} canary already resumed\n`,
    );
  });

  test('status of a rollout stuck past progressDeadlineSeconds exits 1', async () => {
    const name = 'stuck';
    const manifest = adsManifest({
      name,
      namespace: f.ns,
      group: f.group,
      image: 'busybox:1.36',
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
    });
    (manifest.spec as Record<string, unknown>).progressDeadlineSeconds = 10;
    await apply(manifest);
    assert.equal((await ads(['status', name, ...n(), '--timeout', '180s'])).code, 0);
    // An image whose pull fails (e2e/cluster/kwok-stages.yaml): the rollout stalls at maxUnavailable.
    await patchAds(f.ns, name, imagePatch('example.com/agent-badimage:2'));
    const r = await ads(['status', name, ...n(), '--timeout', '180s']);
    assert.equal(r.code, 1, `${r.stdout}${r.stderr}`);
    assert.equal(r.stderr, 'error: daemon set "stuck" exceeded its progress deadline\n');
    assert.match(r.stdout, /^Waiting for daemon set "stuck" rollout to finish: /);
  });
});

describe('kubectl ads migrate: an apps/v1 DaemonSet taken over with every pod kept', { timeout: 600_000 }, () => {
  const f = fixture('plugin-migrate', 12);
  const name = 'legacy-agent';
  const n = () => ['-n', f.ns];

  test('--dry-run prints the manifest and steps; the run keeps all 12 pod uids, adopted, on the same hash', async () => {
    await apply({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace: f.ns, labels: { team: 'infra' } },
      spec: {
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { nodeSelector: { 'e2e-group': f.group }, containers: [{ name: 'c', image: 'busybox:1.36' }] },
        },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } },
      },
    });
    // The native controller (the cluster's KCM) runs it on every node.
    const before = await eventually(
      'the apps/v1 DaemonSet ready on 12 nodes',
      async () => {
        const pods = (await adsPods(f.ns, name)).filter((p) => podReady(p));
        const ds = JSON.parse(await kubectl(['get', 'daemonset.apps', name, '-n', f.ns, '-o', 'json']));
        return pods.length === 12 && ds.status?.updatedNumberScheduled === 12 && pods;
      },
      { timeoutMs: 120_000 },
    );
    const uids = before.map((p) => p.metadata.uid).sort();
    const hash = before[0]!.metadata.labels!['controller-revision-hash'];

    const dry = await ads(['migrate', name, '--dry-run', ...n()]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^apiVersion: apps\.kruise\.io\/v1alpha1\nkind: DaemonSet\n/);
    assert.match(dry.stdout, /rollingUpdateType: Standard\n\s+maxUnavailable: 2\n/);
    assert.match(dry.stdout, /# {3}1\. delete daemonset\.apps\/legacy-agent .* with propagationPolicy Orphan: its 12 pod\(s\) and 1 ControllerRevision\(s\) stay/); // prettier-ignore
    await kubectl(['get', 'daemonset.apps', name, '-n', f.ns]); // still there

    const run = await ads(['migrate', name, ...n()]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `daemonset.apps.kruise.io/${name} migrated from daemonset.apps/${name}: 12 pod(s) adopted, none restarted\n`); // prettier-ignore
    assert.match(run.stderr, /^1\/3 delete .*\n2\/3 create .*\n3\/3 wait .*\n$/);

    const ds = await waitRolledOut(f.ns, name, 12);
    assert.equal(ds.status?.updatedNumberScheduled, 12, 'the adopted pods count as updated');
    const after = await adsPods(f.ns, name);
    assert.deepEqual(after.map((p) => p.metadata.uid).sort(), uids, 'every pod uid kept');
    for (const p of after) {
      assert.equal(p.metadata.labels!['controller-revision-hash'], hash);
      const owner = p.metadata.ownerReferences?.find((o) => o.controller);
      assert.equal(owner?.kind, 'DaemonSet');
      assert.equal(owner?.uid, ds.metadata.uid);
    }
    assert.equal(
      await adsOk(['migrate', name, ...n()]),
      `daemonset.apps.kruise.io/${name} is an Advanced DaemonSet already: nothing to migrate\n`,
    );
  });
});
