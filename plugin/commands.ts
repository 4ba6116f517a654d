// The commands of `kubectl ads`: each reads what it needs from the cluster, asks the pure modules what to do, does
// it, and prints. Writes are JSON merge patches (JSON patch for undo), so they only touch the field they mean to;
// no-ops ("already paused") write nothing and exit 0, as kubectl rollout does.
import type { DaemonSet } from '../src/api/types.ts';
import { API_VERSION, API_VERSION_V1BETA1, KIND } from '../src/api/constants.ts';
import { ApiError, isForbidden, isNotFound } from '../src/k8s/errors.ts';
import { resources } from '../src/k8s/resources.ts';
import { type KubeClient } from '../src/k8s/client.ts';
import type { ControllerRevision, KubeObject, Pod } from '../src/k8s/types.ts';
import type { LabelSelector } from '../src/k8s/types.ts';
import { boolFlag, intFlag, parseGoDuration, stringFlag, UsageError, type ParsedArgs } from './args.ts';
import type { ClusterConnection } from './connect.ts';
import { explainError, PluginError } from './errors.ts';
import {
  canaryChange,
  getHeaders,
  getRow,
  key,
  labelSelectorQuery,
  parsePartition,
  partitionPatch,
  pausePatch,
  freezePatch,
  restartPatch,
  setPartition,
  stepPartition,
  type CanaryAction,
} from './daemonset.ts';
import { formatObjects, formatTable, nameLine, ADS_RESOURCE, type OutputFormat, OUTPUT_FORMATS } from './printers.ts';
import { rolloutStatus, statusFrame, type RolloutStatus } from './status.ts';
import {
  controlledRevisions,
  describeTemplate,
  diffRevisions,
  historyTable,
  revisionByNumber,
  revisionTemplate,
  rollbackPlan,
} from './history.ts';
import { ownedPods, podRows, POD_HEADERS } from './pods.ts';
import { listWatch } from './watch.ts';
import { advancedDaemonSetFor, planMigration, type NativeDaemonSet } from './migrate.ts';
import { getControllerOf } from '../src/daemonset/pods.ts';

export const FIELD_MANAGER = 'kubectl-ads';

/** Where a command writes and what it knows of the terminal. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** stdout is a terminal: live redraws, colours of the map. */
  isTTY: boolean;
  columns: number;
  /** Ends long waits (Ctrl-C). */
  signal: AbortSignal;
  now(): number;
}

export interface Context {
  args: ParsedArgs;
  io: Io;
  /** The cluster, connected on first use (so `completion` and `--help` need no kubeconfig). */
  conn(): ClusterConnection;
}

const line = (io: Io, text: string) => io.out(`${text}\n`);

function outputFormat(args: ParsedArgs, allowed: readonly OutputFormat[] = OUTPUT_FORMATS): OutputFormat | undefined {
  const o = stringFlag(args, 'output');
  if (o === undefined || o === '') return undefined;
  if (!(allowed as readonly string[]).includes(o))
    throw new UsageError(
      `unable to match a printer suitable for the output format "${o}", allowed formats are: ${allowed.join(',')}`,
    );
  return o as OutputFormat;
}

/** The one NAME argument of a command, or a usage error. */
function nameArg(args: ParsedArgs, what = 'NAME', at = 1): string {
  const name = args.positionals[at];
  if (!name) throw new UsageError(`${what} is required`);
  if (args.positionals.length > at + 1)
    throw new UsageError(`unexpected argument "${args.positionals[at + 1] as string}"`);
  return name;
}

/**
 * GET of one Advanced DaemonSet. A 404 is told apart: the object is missing (kubectl's NotFound line), the name is
 * an apps/v1 DaemonSet instead (said so), or the apiserver does not serve apps.kruise.io DaemonSets at all.
 */
export async function getDaemonSet(client: KubeClient, namespace: string, name: string): Promise<DaemonSet> {
  try {
    return await client.get<DaemonSet>(resources.daemonSets, { namespace, name });
  } catch (err) {
    if (!(err instanceof ApiError) || !isNotFound(err)) throw err;
    if (!err.status?.details)
      throw new PluginError(
        `the server doesn't have a resource type "daemonsets" in API group "apps.kruise.io" (is the Advanced DaemonSet CRD ${ADS_RESOURCE} installed?)`,
      );
    let native: KubeObject | undefined;
    try {
      native = await client.get(resources.nativeDaemonSets, { namespace, name });
    } catch {
      // Not there either, or not allowed to look: the NotFound stands.
    }
    if (native)
      throw new PluginError(
        `${ADS_RESOURCE} "${name}" not found: "${name}" in namespace "${namespace}" is an apps/v1 DaemonSet ` +
          `(daemonset.apps/${name}), not an Advanced DaemonSet; use "kubectl rollout ... daemonset/${name}" for it`,
      );
    throw err;
  }
}

async function patchDaemonSet(
  client: KubeClient,
  ds: DaemonSet,
  patch: unknown,
  type: 'merge' | 'json' = 'merge',
): Promise<DaemonSet> {
  return client.patch<DaemonSet>(
    resources.daemonSets,
    { namespace: ds.metadata.namespace, name: ds.metadata.name },
    patch,
    { type, fieldManager: FIELD_MANAGER },
  );
}

/** List items carry no apiVersion/kind; -o json|yaml prints them as kubectl does, with both. */
const withKind = (ds: DaemonSet): DaemonSet => ({
  ...ds,
  apiVersion: ds.apiVersion ?? API_VERSION,
  kind: ds.kind ?? KIND,
});

// ------------------------------------------------------------------------------------------------

export async function runGet(ctx: Context): Promise<number> {
  const { args, io } = ctx;
  const format = outputFormat(args);
  const all = boolFlag(args, 'all-namespaces');
  const name = args.positionals[1];
  if (args.positionals.length > 2) throw new UsageError(`unexpected argument "${args.positionals[2] as string}"`);
  if (name && all) throw new UsageError('a resource cannot be retrieved by name across all namespaces');
  const { client, namespace } = ctx.conn();
  const items = name
    ? [await getDaemonSet(client, namespace, name)]
    : (await client.listAll<DaemonSet>(resources.daemonSets, all ? {} : { namespace, signal: io.signal })).items.map(
        withKind,
      );
  if (format === 'json' || format === 'yaml') {
    line(io, formatObjects(items, format, !!name));
    return 0;
  }
  if (format === 'name') {
    for (const ds of items) line(io, nameLine(ds.metadata.name ?? ''));
    return 0;
  }
  if (items.length === 0) {
    io.err(all ? 'No resources found\n' : `No resources found in ${namespace} namespace.\n`);
    return 0;
  }
  const opts = { wide: format === 'wide', allNamespaces: all };
  const now = io.now();
  line(
    io,
    formatTable(
      getHeaders(opts),
      items.map((ds) => getRow(ds, now, opts)),
    ),
  );
  return 0;
}

// ------------------------------------------------------------------------------------------------

const EXIT_FAILED = 1;
const EXIT_TIMEOUT = 2;

/**
 * `status NAME`: kubectl rollout status's loop. --watch (default true) waits for complete (exit 0) or failed (1);
 * --timeout ends the wait with exit 2; --watch=false prints the state once (exit 0 unless failed). On a terminal
 * the lines are redrawn in place with a progress bar and the node × revision map; otherwise each new message is one
 * plain line.
 */
export async function runStatus(ctx: Context): Promise<number> {
  const { args, io } = ctx;
  const name = nameArg(args);
  const watch = boolFlag(args, 'watch', true);
  const raw = stringFlag(args, 'timeout');
  const timeoutMs = raw === undefined ? 0 : parseGoDuration(raw, 'timeout');
  const { client, namespace } = ctx.conn();
  const first = await getDaemonSet(client, namespace, name);
  const verdict = (ds: DaemonSet) => rolloutStatus(ds);
  if (!watch) {
    const s = verdict(first);
    if (s.state === 'failed') throw new PluginError(s.message, EXIT_FAILED);
    line(io, s.message);
    return 0;
  }

  const stop = new AbortController();
  const timeout = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
  const signal = AbortSignal.any([stop.signal, io.signal, ...(timeout ? [timeout] : [])]);
  const live = io.isTTY;
  let ds = first;
  let pods = new Map<string, Pod>();
  let lastMessage = '';
  let drawn = 0;
  let result: RolloutStatus | undefined;
  let failure: unknown;
  let mapNote: string | undefined;

  const render = () => {
    let s: RolloutStatus;
    try {
      s = verdict(ds);
    } catch (err) {
      failure = err;
      stop.abort();
      return;
    }
    if (live) {
      const owned = ownedPods([...pods.values()], ds);
      const lines = statusFrame(ds, owned, s, io.columns, mapNote);
      io.out(`${drawn > 0 ? `\x1b[${drawn}A\r\x1b[J` : ''}${lines.join('\n')}\n`);
      drawn = lines.length;
    } else if (s.message !== lastMessage) {
      line(io, s.message);
    }
    lastMessage = s.message;
    if (s.state !== 'progressing') {
      result = s;
      stop.abort();
    }
  };
  // Redraws at most every 100 ms: a rollout of many nodes changes pods many times a second.
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      if (!stop.signal.aborted) render();
    }, 100).unref();
  };

  const podSelector = labelSelectorQuery(first.spec.selector as LabelSelector);
  if (live) {
    // The first frame already shows the map (a rollout that is complete at once prints only that frame).
    try {
      const list = await client.listAll<Pod>(resources.pods, { namespace, labelSelector: podSelector, signal });
      pods = new Map(list.items.map((p) => [`${namespace}/${p.metadata.name ?? ''}`, p]));
    } catch (err) {
      if (!isForbidden(err)) throw err;
      mapNote = `(no node × revision map: ${explainError(err).text.split('\n')[0] ?? ''})`;
    }
  }
  render();
  if (failure) throw failure;
  if (result) return finish(io, result);
  const watches: Promise<void>[] = [
    listWatch<DaemonSet>(
      client,
      resources.daemonSets,
      { namespace, fieldSelector: `metadata.name=${name}`, signal },
      (objects) => {
        const next = objects.get(`${namespace}/${name}`);
        if (!next) {
          failure = new PluginError(`${ADS_RESOURCE} "${name}" was deleted`);
          stop.abort();
          return;
        }
        ds = next;
        if (live) schedule();
        else render();
      },
    ),
  ];
  if (live)
    watches.push(
      listWatch<Pod>(client, resources.pods, { namespace, labelSelector: podSelector, signal }, (objects) => {
        pods = new Map(objects);
        schedule();
      }).catch((err: unknown) => {
        // The map is a bonus: without the right to list pods, the status goes on without it.
        if (!isForbidden(err)) throw err;
        mapNote = `(no node × revision map: ${explainError(err).text.split('\n')[0] ?? ''})`;
        schedule();
      }),
    );
  // The watches end when `signal` aborts (done, timeout, Ctrl-C) or fail (403, 404).
  await Promise.race([
    Promise.all(watches).catch((err: unknown) => {
      if (!signal.aborted) {
        failure = err;
        stop.abort();
      }
    }),
    new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
  ]);
  if (failure) throw failure;
  if (result) return finish(io, result);
  if (timeout?.aborted) {
    io.err('error: timed out waiting for the condition\n');
    return EXIT_TIMEOUT;
  }
  return 130; // interrupted
}

function finish(io: Io, s: RolloutStatus): number {
  if (s.state === 'failed') {
    io.err(`error: ${s.message}\n`);
    return EXIT_FAILED;
  }
  return 0;
}

// ------------------------------------------------------------------------------------------------

/**
 * A command that sets a switch of the DaemonSet (`patchOf` gives the patch, or undefined when it is already so) and
 * says `word` ("paused", "frozen", ...), or "already <word>" without writing.
 */
function runSwitch(
  patchOf: (ds: DaemonSet) => unknown,
  word: string,
  warning: (ds: DaemonSet) => string | undefined = () => undefined,
) {
  return async (ctx: Context): Promise<number> => {
    const name = nameArg(ctx.args);
    const { client, namespace } = ctx.conn();
    const ds = await getDaemonSet(client, namespace, name);
    const patch = patchOf(ds);
    if (!patch) {
      line(ctx.io, nameLine(name, `already ${word}`));
      return 0;
    }
    const warn = warning(ds);
    if (warn) ctx.io.err(`warning: ${warn}\n`);
    await patchDaemonSet(client, ds, patch);
    line(ctx.io, nameLine(name, word));
    return 0;
  };
}

export function runPause(paused: boolean) {
  return runSwitch(
    (ds) => pausePatch(ds, paused),
    paused ? 'paused' : 'resumed',
    (ds) =>
      ds.spec.updateStrategy?.type === 'OnDelete'
        ? 'updateStrategy is OnDelete: rollingUpdate.paused has no effect until it is RollingUpdate'
        : undefined,
  );
}

/** `freeze` / `unfreeze`: ExtendedDaemonSet's rollout-frozen; unlike pause, new nodes get no pod either. */
export function runFreeze(frozen: boolean) {
  return runSwitch((ds) => freezePatch(ds, frozen), frozen ? 'frozen' : 'unfrozen');
}

export async function runPartition(ctx: Context): Promise<number> {
  const { args, io } = ctx;
  const name = args.positionals[1];
  if (!name) throw new UsageError('NAME is required');
  const value = args.positionals[2];
  const step = intFlag(args, 'step');
  if (args.positionals.length > 3) throw new UsageError(`unexpected argument "${args.positionals[3] as string}"`);
  if ((value === undefined) === (step === undefined))
    throw new UsageError('give either a partition (N or N%) or --step K');
  const parsed = value !== undefined ? parsePartition(value) : undefined;
  const { client, namespace } = ctx.conn();
  const ds = await getDaemonSet(client, namespace, name);
  const change = parsed !== undefined ? setPartition(ds, parsed) : stepPartition(ds, step as number);
  if (change.noop) {
    line(io, nameLine(name, change.noop));
    return 0;
  }
  if (ds.spec.updateStrategy?.type === 'OnDelete')
    io.err('warning: updateStrategy is OnDelete: the partition has no effect until it is RollingUpdate\n');
  const desired = ds.status?.desiredNumberScheduled;
  if (typeof change.value === 'number' && desired !== undefined && change.value > desired)
    io.err(
      `warning: partition ${change.value} is above the ${desired} node${desired === 1 ? '' : 's'} that should run this DaemonSet: every node stays on its revision\n`,
    );
  await patchDaemonSet(client, ds, partitionPatch(change.value));
  line(io, nameLine(name, change.message));
  return 0;
}

export async function runRestart(ctx: Context): Promise<number> {
  const name = nameArg(ctx.args);
  const { client, namespace } = ctx.conn();
  const ds = await getDaemonSet(client, namespace, name);
  // kubectl refuses to restart a paused Deployment: the new template would not roll out.
  if (ds.spec.updateStrategy?.rollingUpdate?.paused === true && ds.spec.updateStrategy.type !== 'OnDelete')
    throw new PluginError(`can't restart paused ${nameLine(name)} (run "kubectl ads resume ${name}" first)`);
  await patchDaemonSet(client, ds, restartPatch(new Date(ctx.io.now())));
  line(ctx.io, nameLine(name, 'restarted'));
  return 0;
}

/** The DaemonSet's ControllerRevisions (daemonSetHistory): selector-matching, controlled by it. */
async function daemonSetHistory(client: KubeClient, ds: DaemonSet): Promise<ControllerRevision[]> {
  const list = await client.listAll<ControllerRevision>(resources.controllerRevisions, {
    namespace: ds.metadata.namespace,
    labelSelector: labelSelectorQuery(ds.spec.selector as LabelSelector),
  });
  return controlledRevisions(list.items, ds);
}

export async function runUndo(ctx: Context): Promise<number> {
  const name = nameArg(ctx.args);
  const toRevision = intFlag(ctx.args, 'to-revision') ?? 0;
  const { client, namespace } = ctx.conn();
  const ds = await getDaemonSet(client, namespace, name);
  const plan = rollbackPlan(ds, await daemonSetHistory(client, ds), toRevision);
  if ('skipped' in plan) {
    line(ctx.io, nameLine(name, plan.skipped));
    return 0;
  }
  try {
    await patchDaemonSet(client, ds, plan.patch, 'json');
  } catch (err) {
    if (err instanceof ApiError && (err.code === 409 || err.code === 422)) {
      const now = await getDaemonSet(client, namespace, name);
      if (now.metadata.generation !== ds.metadata.generation)
        throw new PluginError(`${nameLine(name)} changed while rolling back: nothing written; run the undo again`);
    }
    throw err;
  }
  line(ctx.io, nameLine(name, 'rolled back'));
  if (ds.spec.updateStrategy?.rollingUpdate?.paused === true)
    ctx.io.err(
      `note: the rollout is paused; revision ${plan.revision}'s template rolls out after "kubectl ads resume ${name}"\n`,
    );
  return 0;
}

export async function runHistory(ctx: Context): Promise<number> {
  const { args, io } = ctx;
  const name = nameArg(args);
  const revision = intFlag(args, 'revision') ?? 0;
  const diff = intFlag(args, 'diff');
  const format = outputFormat(args, ['json', 'yaml']) as 'json' | 'yaml' | undefined;
  const { client, namespace } = ctx.conn();
  const ds = await getDaemonSet(client, namespace, name);
  const history = await daemonSetHistory(client, ds);
  if (diff !== undefined) {
    const text = diffRevisions(ds, history, diff, revision > 0 ? revision : undefined);
    const against = revision > 0 ? `revision ${revision}` : 'the current template';
    line(io, text || `revision ${diff} and ${against} have the same pod template`);
    return 0;
  }
  if (revision > 0) {
    const template = revisionTemplate(revisionByNumber(history, revision));
    if (format) line(io, formatObjects([template], format, true));
    else line(io, `${nameLine(name, `with revision #${revision}`)}\n${describeTemplate(template)}`);
    return 0;
  }
  if (format) {
    line(
      io,
      formatObjects(
        history.map((r) => ({ apiVersion: 'apps/v1', kind: 'ControllerRevision', ...r })),
        format,
        false,
      ),
    );
    return 0;
  }
  line(io, `${nameLine(name)}\n${historyTable(history)}`);
  return 0;
}

export async function runPods(ctx: Context): Promise<number> {
  const { args, io } = ctx;
  const name = nameArg(args);
  const format = outputFormat(args, ['json', 'yaml', 'name']);
  const { client, namespace } = ctx.conn();
  const ds = await getDaemonSet(client, namespace, name);
  const list = await client.listAll<Pod>(resources.pods, {
    namespace,
    labelSelector: labelSelectorQuery(ds.spec.selector as LabelSelector),
  });
  const pods = ownedPods(list.items, ds);
  if (format === 'json' || format === 'yaml') {
    line(
      io,
      formatObjects(
        pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p })),
        format,
        false,
      ),
    );
    return 0;
  }
  if (format === 'name') {
    for (const p of pods) line(io, `pod/${p.metadata.name ?? ''}`);
    return 0;
  }
  if (pods.length === 0) {
    io.err(`No pods found for ${nameLine(name)} in ${namespace} namespace.\n`);
    return 0;
  }
  line(io, formatTable([...POD_HEADERS], podRows(pods, ds, io.now())));
  return 0;
}

export async function runCanary(ctx: Context): Promise<number> {
  const action = ctx.args.positionals[1];
  const actions = ['promote', 'pause', 'resume', 'fail'];
  if (!action || !actions.includes(action))
    throw new UsageError(`canary needs an action: ${actions.join('|')}${action ? `, got "${action}"` : ''}`);
  const name = nameArg(ctx.args, 'NAME', 2);
  const { client, namespace } = ctx.conn();
  const ds = await getDaemonSet(client, namespace, name);
  const change = canaryChange(ds, action as CanaryAction);
  if (change.noop) {
    line(ctx.io, nameLine(name, change.noop));
    return 0;
  }
  await patchDaemonSet(client, ds, { metadata: { annotations: change.annotations } });
  line(ctx.io, nameLine(name, change.message));
  return 0;
}

/** Names for completion: DaemonSets of the namespace, or namespaces; quietly nothing on any failure (2 s at most). */
export async function completionNames(conn: ClusterConnection, what: 'daemonsets' | 'namespaces'): Promise<string[]> {
  try {
    const type = what === 'daemonsets' ? resources.daemonSets : resources.namespaces;
    const namespace = what === 'daemonsets' ? conn.namespace : undefined;
    const list = await conn.client.list<KubeObject>(type, { namespace, signal: AbortSignal.timeout(2000) });
    return list.items.map((o) => o.metadata.name ?? '').filter(Boolean);
  } catch {
    return [];
  } finally {
    conn.client.close();
  }
}

export { key };

/**
 * `migrate NAME`: the apps/v1 DaemonSet NAME becomes an Advanced DaemonSet with every pod kept (plugin/migrate.ts
 * decides; this does the steps). --dry-run prints the manifest and the steps, and what would be refused.
 */
export async function runMigrate(ctx: Context): Promise<number> {
  const { args, io } = ctx;
  const name = nameArg(args);
  const dryRun = boolFlag(args, 'dry-run') === true;
  const apiVersion = stringFlag(args, 'api-version') ?? API_VERSION;
  const type = { [API_VERSION]: resources.daemonSets, [API_VERSION_V1BETA1]: resources.daemonSetsV1beta1 }[apiVersion];
  if (!type)
    throw new UsageError(`--api-version must be ${API_VERSION} or ${API_VERSION_V1BETA1}, got "${apiVersion}"`);
  const rawTimeout = stringFlag(args, 'timeout');
  const timeoutMs = rawTimeout === undefined ? 300_000 : parseGoDuration(rawTimeout, 'timeout');
  const { client, namespace } = ctx.conn();
  const native = await client.getIfExists<NativeDaemonSet>(resources.nativeDaemonSets, { namespace, name });
  const advanced = await client.getIfExists<DaemonSet>(resources.daemonSets, { namespace, name });
  if (!native) {
    if (advanced) {
      line(io, nameLine(name, 'is an Advanced DaemonSet already: nothing to migrate'));
      return 0;
    }
    throw new PluginError(`daemonsets.apps "${name}" not found in namespace "${namespace}"`);
  }
  if (advanced)
    throw new PluginError(
      `${nameLine(name)} exists already beside daemonset.apps/${name}: both run a pod on every node they select; delete one of them (for the native one with --cascade=orphan, then the Advanced DaemonSet adopts its pods)`,
    );
  const selector = labelSelectorQuery(native.spec.selector as LabelSelector);
  const owned = <T extends KubeObject>(items: T[]) =>
    items.filter((o) => getControllerOf(o)?.uid === native.metadata.uid);
  const revisions = owned((await client.listAll<ControllerRevision>(resources.controllerRevisions, { namespace, labelSelector: selector })).items); // prettier-ignore
  const pods = owned((await client.listAll<Pod>(resources.pods, { namespace, labelSelector: selector })).items);
  // The webhook's defaults, as the controller will hash them; its refusal, if any, is the user's to read.
  const defaulted = await client.create<DaemonSet>(type, advancedDaemonSetFor(native, apiVersion), {
    dryRun: true,
    fieldManager: FIELD_MANAGER,
  });
  const plan = planMigration(native, defaulted, revisions, pods);
  if (dryRun) {
    io.out(formatObjects([plan.manifest], 'yaml', true));
    io.out(`# Steps of "kubectl ads migrate ${name}":\n${plan.steps.map((s, i) => `#   ${i + 1}. ${s}`).join('\n')}\n`);
    for (const r of plan.refusals) io.err(`error: would refuse: ${r}\n`);
    return plan.refusals.length > 0 ? 1 : 0;
  }
  if (plan.refusals.length > 0) throw new PluginError(plan.refusals.join('\n'));
  const deadline = Date.now() + timeoutMs;
  const waitFor = async (what: string, done: () => Promise<string | true>) => {
    for (;;) {
      const state = await done();
      if (state === true) return;
      if (Date.now() > deadline) throw new PluginError(`timed out waiting for ${what}: ${state}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  io.err(`1/3 ${plan.steps[0]}\n`);
  await client.delete(
    resources.nativeDaemonSets,
    { namespace, name },
    {
      propagationPolicy: 'Orphan',
      preconditions: { uid: native.metadata.uid! },
    },
  );
  await waitFor(`daemonset.apps/${name} to be deleted`, async () =>
    (await client.getIfExists(resources.nativeDaemonSets, { namespace, name })) ? 'still there' : true,
  );
  io.err(`2/3 ${plan.steps[1]}\n`);
  const created = await client.create<DaemonSet>(type, plan.manifest, { fieldManager: FIELD_MANAGER });
  io.err(`3/3 ${plan.steps[2]}\n`);
  const want = new Map(plan.pods.map((p) => [p.uid, p]));
  await waitFor('the controller to adopt every pod', async () => {
    const now = (await client.listAll<Pod>(resources.pods, { namespace, labelSelector: selector })).items;
    const byUid = new Map(now.map((p) => [p.metadata.uid ?? '', p]));
    const gone = [...want.values()].filter((p) => !byUid.has(p.uid));
    if (gone.length > 0)
      throw new PluginError(
        `pod(s) ${gone.map((p) => `${p.name} on ${p.node}`).join(', ')} went away during the migration`,
      );
    const adopted = [...want.keys()].filter((uid) => getControllerOf(byUid.get(uid)!)?.uid === created.metadata.uid);
    return adopted.length === want.size || `${adopted.length} of ${want.size} pods adopted`;
  });
  line(io, nameLine(name, `migrated from daemonset.apps/${name}: ${want.size} pod(s) adopted, none restarted`));
  return 0;
}
