// The status of a DaemonSet's DaemonSetSettings (src/api/setting.ts), pure: how many of the DaemonSet's nodes each
// matches, whether it names containers the DaemonSet has (Valid), and whether another setting sets the same container
// on some node (Conflicting: the oldest wins, then the first by name, overrides.ts settingPrecedence). Written by the
// sync of the DaemonSet they reference; ExtendedDaemonSet says only "valid" or "error" in status.status.
import {
  SETTING_CONDITION_CONFLICTING,
  SETTING_CONDITION_VALID,
  type DaemonSetSetting,
  type DaemonSetSettingStatus,
  type SettingCondition,
} from '../api/setting.ts';
import type { DaemonSet } from '../api/types.ts';
import { canonicalJson } from '../k8s/hash.ts';
import { formatTime } from '../k8s/pod.ts';
import type { NodeIndex } from './context.ts';
import { SETTING_CONFLICT_REASON, SETTING_UNKNOWN_CONTAINER_REASON } from './events.ts';
import { NODE_SOURCE, settingMatchesNode } from './overrides.ts';
import type { PlanEvent, SettingStatusWrite } from './plan-types.ts';

/** Node names a message lists before "and N more". */
const MESSAGE_NODES = 3;

interface SettingFacts {
  nodes: number;
  /** Per other setting that wins over this one: the nodes where it does. */
  overriddenBy: Map<string, Set<string>>;
  /** Per other setting this one wins over: the nodes where it does. */
  preferredOver: Map<string, Set<string>>;
}

/** The statuses to write and the events to record for the settings of `ctx`'s DaemonSet. */
export function settingStatuses(ctx: NodeIndex): { writes: SettingStatusWrite[]; events: PlanEvent[] } {
  const settings = ctx.resources.settings;
  const writes: SettingStatusWrite[] = [];
  const events: PlanEvent[] = [];
  if (settings.length === 0) return { writes, events };
  const facts = settingFacts(ctx);
  for (const s of settings) {
    const f = facts.get(s) as SettingFacts;
    const conditions = [validCondition(ctx.ds, s), conflictingCondition(f)];
    const status = withTransitions(s, { nodes: f.nodes, conditions }, ctx.now);
    if (canonicalJson(status) === canonicalJson(s.status ?? {})) continue;
    writes.push({ setting: s, status });
    events.push(...transitionEvents(s, status));
  }
  return { writes, events };
}

/** Per setting: the nodes it matches, and per node and container where several set it, who wins. */
function settingFacts(ctx: NodeIndex): Map<DaemonSetSetting, SettingFacts> {
  const settings = ctx.resources.settings;
  const containers = (ctx.ds.spec.template.spec?.containers ?? []).map((c) => c.name);
  const facts = new Map<DaemonSetSetting, SettingFacts>(
    settings.map((s) => [s, { nodes: 0, overriddenBy: new Map(), preferredOver: new Map() }]),
  );
  for (const state of ctx.states) {
    const node = state.node;
    if (!node || !state.shouldRun) continue;
    const matched = settings.filter((s) => settingMatchesNode(s, node));
    for (const s of matched) (facts.get(s) as SettingFacts).nodes++;
    if (matched.length < 2) continue;
    const applied = ctx.resources.of(state.name)?.containers;
    for (const c of containers) {
      // A node annotation wins over every setting: no setting applies there, so none conflicts.
      if (applied?.[c]?.source === NODE_SOURCE) continue;
      const setters = matched.filter((s) => s.spec.containers?.some((x) => x.name === c));
      const [winner, ...losers] = setters;
      if (!winner) continue;
      for (const loser of losers) {
        add((facts.get(loser) as SettingFacts).overriddenBy, winner.metadata.name ?? '', state.name);
        add((facts.get(winner) as SettingFacts).preferredOver, loser.metadata.name ?? '', state.name);
      }
    }
  }
  return facts;
}

function add(m: Map<string, Set<string>>, key: string, node: string): void {
  let set = m.get(key);
  if (!set) m.set(key, (set = new Set()));
  set.add(node);
}

function validCondition(ds: DaemonSet, s: DaemonSetSetting): SettingCondition {
  const names = (ds.spec.template.spec?.containers ?? []).map((c) => c.name);
  const unknown = (s.spec.containers ?? [])
    .map((c, i) => ({ name: c.name, i }))
    .filter(({ name }) => !names.includes(name));
  const ref = `${ds.metadata.namespace ?? ''}/${ds.metadata.name ?? ''}`;
  if (unknown.length > 0) {
    return {
      type: SETTING_CONDITION_VALID,
      status: 'False',
      reason: SETTING_UNKNOWN_CONTAINER_REASON,
      message: `${unknown.map(({ name, i }) => `spec.containers[${i}].name: "${name}"`).join(', ')}: not a container of DaemonSet ${ref} (it has ${names.join(', ')})`,
    };
  }
  return { type: SETTING_CONDITION_VALID, status: 'True', reason: 'Resolved', message: `applies to DaemonSet ${ref}` };
}

function conflictingCondition(f: SettingFacts): SettingCondition {
  const tieBreak = 'the oldest setting wins, then the first by name';
  if (f.overriddenBy.size > 0) {
    return {
      type: SETTING_CONDITION_CONFLICTING,
      status: 'True',
      reason: 'Overridden',
      message: `${describe(f.overriddenBy)} set the same containers and win (${tieBreak})`,
    };
  }
  if (f.preferredOver.size > 0) {
    return {
      type: SETTING_CONDITION_CONFLICTING,
      status: 'True',
      reason: 'Preferred',
      message: `${describe(f.preferredOver)} set the same containers; this setting wins (${tieBreak})`,
    };
  }
  return { type: SETTING_CONDITION_CONFLICTING, status: 'False', reason: 'NoConflict', message: '' };
}

/** `setting a on 2 nodes (n1, n2); setting b on 1 node (n3)`, settings by name. */
function describe(m: Map<string, Set<string>>): string {
  return [...m.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, nodes]) => {
      const list = [...nodes].sort();
      const shown = list.slice(0, MESSAGE_NODES).join(', ');
      const more = list.length > MESSAGE_NODES ? ` and ${list.length - MESSAGE_NODES} more` : '';
      return `DaemonSetSetting ${name} on ${list.length} node${list.length === 1 ? '' : 's'} (${shown}${more})`;
    })
    .join('; ');
}

/**
 * The status with observedGeneration, and each condition's lastTransitionTime kept from the stored condition of the
 * same type when its status did not change (now otherwise).
 */
function withTransitions(
  s: DaemonSetSetting,
  status: { nodes: number; conditions: SettingCondition[] },
  now: number,
): DaemonSetSettingStatus {
  const stored = s.status?.conditions ?? [];
  const conditions = status.conditions.map((c) => {
    const before = stored.find((x) => x.type === c.type);
    const lastTransitionTime =
      before?.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : formatTime(now);
    return { ...c, lastTransitionTime, observedGeneration: s.metadata.generation ?? 0 };
  });
  return { observedGeneration: s.metadata.generation ?? 0, nodes: status.nodes, conditions };
}

/** A Warning when Conflicting turns True (or its reason changes) and when Valid turns False. */
function transitionEvents(s: DaemonSetSetting, status: DaemonSetSettingStatus): PlanEvent[] {
  const events: PlanEvent[] = [];
  const before = (type: string) => s.status?.conditions?.find((c) => c.type === type);
  const after = (type: string) => status.conditions?.find((c) => c.type === type);
  const conflict = after(SETTING_CONDITION_CONFLICTING);
  const conflictBefore = before(SETTING_CONDITION_CONFLICTING);
  if (conflict?.status === 'True' && (conflictBefore?.status !== 'True' || conflictBefore.reason !== conflict.reason))
    events.push({ type: 'Warning', reason: SETTING_CONFLICT_REASON, message: conflict.message ?? '', about: s });
  const valid = after(SETTING_CONDITION_VALID);
  if (valid?.status === 'False' && before(SETTING_CONDITION_VALID)?.status !== 'False')
    events.push({ type: 'Warning', reason: SETTING_UNKNOWN_CONTAINER_REASON, message: valid.message ?? '', about: s });
  return events;
}

/**
 * The status of a setting whose DaemonSet does not exist (the controller writes it when the DaemonSet's key syncs
 * and finds none): Valid False, reason DaemonSetNotFound; undefined when the stored status says so already.
 */
export function missingDaemonSetStatus(s: DaemonSetSetting, now: number): DaemonSetSettingStatus | undefined {
  const key = `${s.metadata.namespace ?? ''}/${s.spec.reference.name}`;
  const status = withTransitions(
    s,
    {
      nodes: 0,
      conditions: [
        {
          type: SETTING_CONDITION_VALID,
          status: 'False',
          reason: 'DaemonSetNotFound',
          message: `DaemonSet ${key} does not exist`,
        },
        { type: SETTING_CONDITION_CONFLICTING, status: 'False', reason: 'NoConflict', message: '' },
      ],
    },
    now,
  );
  return canonicalJson(status) === canonicalJson(s.status ?? {}) ? undefined : status;
}
