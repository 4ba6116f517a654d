// `history` and `undo` over the DaemonSet's ControllerRevisions, as kubectl does for apps/v1 DaemonSets
// (DaemonSetHistoryViewer and DaemonSetRollbacker,
// https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/kubectl/pkg/polymorphichelpers/history.go
// and rollback.go): the revisions are those in the namespace matching the DaemonSet's selector and controlled by it;
// the CHANGE-CAUSE is their kubernetes.io/change-cause annotation (the controller copies the DaemonSet's annotations
// onto each revision it creates); undo without --to-revision goes to the second highest revision; a revision whose
// template is already the DaemonSet's is "skipped rollback". kubectl restores with a strategic merge patch of the
// revision's data; a custom resource takes no strategic merge patch, so the template is replaced with a JSON patch,
// which is what the revision's `$patch: replace` asks for. Plus `history --revision N --diff M`.
import type { DaemonSet } from '../src/api/types.ts';
import type { ControllerRevision, PodTemplateSpec } from '../src/k8s/types.ts';
import { stringify as toYaml } from 'yaml';
import {
  defaultedRevisionData,
  normalizeRevisionData,
  revisionData,
  revisionMatches,
} from '../src/daemonset/history.ts';
import { templateOfRevision } from '../src/daemonset/inplace.ts';
import { getControllerOf } from '../src/daemonset/pods.ts';
import { CONTROLLER_REVISION_HASH_LABEL } from '../src/api/constants.ts';
import { sortKeys } from '../src/k8s/hash.ts';
import { PluginError } from './errors.ts';
import { formatTable } from './printers.ts';
import { unifiedDiff } from './diff.ts';

export const CHANGE_CAUSE_ANNOTATION = 'kubernetes.io/change-cause';

/** controlledHistory: the revisions whose controller is `ds` (by UID), sorted by revision number. */
export function controlledRevisions(revisions: readonly ControllerRevision[], ds: DaemonSet): ControllerRevision[] {
  return revisions
    .filter((r) => getControllerOf(r)?.uid === ds.metadata.uid)
    .sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0));
}

/** The overview: REVISION, HASH (the pods' controller-revision-hash), CHANGE-CAUSE. */
export function historyTable(history: readonly ControllerRevision[]): string {
  if (history.length === 0) return 'No rollout history found.';
  // historyInfo is keyed by revision number in kubectl: a number seen twice shows once (the last).
  const byNumber = new Map<number, ControllerRevision>();
  for (const r of history) byNumber.set(r.revision ?? 0, r);
  const rows = [...byNumber.entries()]
    .sort(([a], [b]) => a - b)
    .map(([n, r]) => [
      String(n),
      r.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '<none>',
      r.metadata.annotations?.[CHANGE_CAUSE_ANNOTATION] || '<none>',
    ]);
  return formatTable(['REVISION', 'HASH', 'CHANGE-CAUSE'], rows);
}

export function revisionNotFound(r: number): PluginError {
  return new PluginError(`unable to find specified revision ${r} in history`);
}

/** findHistory: revision `toRevision`, or with 0 the previous one (second highest), or undefined. */
export function findHistory(
  toRevision: number,
  history: readonly ControllerRevision[],
): ControllerRevision | undefined {
  if (toRevision === 0) {
    if (history.length <= 1) return undefined;
    return [...history].sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0))[history.length - 2];
  }
  return history.find((h) => h.revision === toRevision);
}

/** The revision `n` for `history --revision n`, or kubectl's error. */
export function revisionByNumber(history: readonly ControllerRevision[], n: number): ControllerRevision {
  const r = history.find((h) => h.revision === n);
  if (!r) throw new PluginError('unable to find the specified revision');
  return r;
}

export type RollbackPlan =
  { skipped: string; revision: number } | { revision: number; patch: { op: string; path: string; value?: unknown }[] };

/** What `undo [--to-revision N]` does (DaemonSetRollbacker.Rollback). */
export function rollbackPlan(ds: DaemonSet, history: readonly ControllerRevision[], toRevision: number): RollbackPlan {
  if (toRevision < 0) throw revisionNotFound(toRevision);
  if (toRevision === 0 && history.length <= 1) throw new PluginError('no last revision to roll back to');
  const target = findHistory(toRevision, history);
  if (!target) throw revisionNotFound(toRevision);
  if (revisionMatches(ds, target))
    return {
      skipped: `skipped rollback (current template already matches revision ${target.revision})`,
      revision: target.revision,
    };
  const template = templateOfRevision(target);
  if (!template) throw new PluginError(`unable to parse history ${target.metadata.name ?? ''}`);
  // The test op makes the write conditional on the spec it was planned against (a template changed meanwhile is not
  // overwritten); on generation, not resourceVersion, which the controller's status writes change all the time.
  return {
    revision: target.revision,
    patch: [
      { op: 'test', path: '/metadata/generation', value: ds.metadata.generation },
      { op: 'replace', path: '/spec/template', value: template },
    ],
  };
}

// ------------------------------------------------------------------------------------------------
// Showing a template

const kv = (m: Record<string, string> | undefined, sep: string) =>
  Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}${sep}${m?.[k]}`);

/** Lines "  Title:\tfirst" then "  <pad>\tnext", or "<none>" (describe's printLabelsMultiline). */
function multiline(indent: string, title: string, items: string[]): string[] {
  if (items.length === 0) return [`${indent}${title}:\t<none>`];
  return items.map((v, i) => (i === 0 ? `${indent}${title}:\t${v}` : `${indent}${' '.repeat(title.length + 1)}\t${v}`));
}

type Json = Record<string, unknown>;
const asObj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const asArr = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);

function describeContainer(c: Json): string[] {
  const out = [`   ${String(c.name)}:`, `    Image:\t${String(c.image ?? '')}`];
  const ports = asArr(c.ports);
  out.push(
    `    Port:\t${ports.length ? ports.map((p) => `${String(p.containerPort)}/${String(p.protocol ?? 'TCP')}`).join(', ') : '<none>'}`,
  );
  const hostPorts = ports.filter((p) => p.hostPort);
  out.push(
    `    Host Port:\t${hostPorts.length ? hostPorts.map((p) => `${String(p.hostPort)}/${String(p.protocol ?? 'TCP')}`).join(', ') : '<none>'}`,
  );
  const list = (title: string, v: unknown) => {
    const items = asArr(v) as unknown as string[];
    if (items.length) out.push(`    ${title}:`, ...items.map((x) => `      ${String(x)}`));
  };
  list('Command', c.command);
  list('Args', c.args);
  const resources = asObj(c.resources);
  for (const [title, key] of [
    ['Limits', 'limits'],
    ['Requests', 'requests'],
  ] as const) {
    const r = asObj(resources[key]);
    if (Object.keys(r).length)
      out.push(
        `    ${title}:`,
        ...Object.keys(r)
          .sort()
          .map((k) => `      ${k}:\t${String(r[k])}`),
      );
  }
  const env = asArr(c.env);
  if (env.length === 0) out.push('    Environment:\t<none>');
  else
    out.push(
      '    Environment:',
      ...env.map((e) => `      ${String(e.name)}:\t${e.value !== undefined ? String(e.value) : '<set from a source>'}`),
    );
  const mounts = asArr(c.volumeMounts);
  if (mounts.length === 0) out.push('    Mounts:\t<none>');
  else
    out.push(
      '    Mounts:',
      ...mounts.map((m) => `      ${String(m.mountPath)} from ${String(m.name)} (${m.readOnly ? 'ro' : 'rw'})`),
    );
  return out;
}

/** The pod template as `kubectl rollout history --revision N` prints it (describe.DescribePodTemplate, abridged). */
export function describeTemplate(template: PodTemplateSpec): string {
  const spec = asObj(template.spec);
  const meta = template.metadata ?? {};
  const out = ['Pod Template:'];
  out.push(...multiline('  ', 'Labels', kv(meta.labels, '=')));
  if (Object.keys(meta.annotations ?? {}).length)
    out.push(...multiline('  ', 'Annotations', kv(meta.annotations, ': ')));
  if (spec.serviceAccountName) out.push(`  Service Account:\t${String(spec.serviceAccountName)}`);
  const init = asArr(spec.initContainers);
  if (init.length) out.push('  Init Containers:', ...init.flatMap(describeContainer));
  out.push('  Containers:', ...asArr(spec.containers).flatMap(describeContainer));
  const volumes = asArr(spec.volumes);
  if (volumes.length === 0) out.push('  Volumes:\t<none>');
  else
    out.push(
      '  Volumes:',
      ...volumes.map((v) => {
        const type = Object.keys(v).find((k) => k !== 'name') ?? 'unknown';
        return `   ${String(v.name)}:\t${type}`;
      }),
    );
  out.push(...multiline('  ', 'Node-Selectors', kv(spec.nodeSelector as Record<string, string> | undefined, '=')));
  const tolerations = asArr(spec.tolerations).map((t) => {
    let s = String(t.key ?? '');
    if (t.value) s += `=${String(t.value)}`;
    if (t.effect) s += `:${String(t.effect)}`;
    if (t.operator === 'Exists' && !t.key) s = 'op=Exists';
    else if (t.operator === 'Exists') s += ' op=Exists';
    if (t.tolerationSeconds !== undefined) s += ` for ${String(t.tolerationSeconds)}s`;
    return s;
  });
  out.push(...multiline('  ', 'Tolerations', tolerations));
  return out.join('\n');
}

/**
 * A template as compared: defaulted as the apiserver defaults an apps/v1 template, empty fields dropped, keys sorted
 * (src/daemonset/history.ts), so a revision written by another controller and the same template written through our
 * webhook show no difference; then YAML.
 */
export function comparableTemplateYaml(template: PodTemplateSpec | Record<string, unknown>): string {
  const data = normalizeRevisionData(defaultedRevisionData({ spec: { template } })) as {
    spec?: { template?: unknown };
  };
  return toYaml(sortKeys(data.spec?.template ?? {}));
}

/** The template a revision stores (without `$patch`). */
export function revisionTemplate(r: ControllerRevision): PodTemplateSpec {
  const t = templateOfRevision(r);
  if (!t) throw new PluginError(`unable to parse history ${r.metadata.name ?? ''}`);
  return t;
}

/**
 * `history --revision N --diff M`: the unified diff from revision M to revision N; with `n` undefined, from revision M
 * to the DaemonSet's current template. '' when equal.
 */
export function diffRevisions(
  ds: DaemonSet,
  history: readonly ControllerRevision[],
  from: number,
  to: number | undefined,
): string {
  const a = revisionTemplate(revisionByNumber(history, from));
  const b =
    to === undefined
      ? (revisionData(ds).spec.template as Record<string, unknown>)
      : revisionTemplate(revisionByNumber(history, to));
  if (to === undefined) delete (b as { $patch?: unknown }).$patch;
  return unifiedDiff(
    comparableTemplateYaml(a),
    comparableTemplateYaml(b),
    `revision ${from}`,
    to === undefined ? 'current template' : `revision ${to}`,
  );
}
