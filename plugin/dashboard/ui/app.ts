// The dashboard page: preact + htm, fed by server-sent events (the server pushes whole views, throttled; the page
// only renders what the server computed: the rollout's state comes from one function, rollout.ts, for the table and
// the detail alike). `#/<namespace>/<name>` selects a DaemonSet; without one the first is shown.
// Cells, rows, badges and buttons carry data-* attributes (revision, state, hold, canary, badge, action) that both the
// CSS and the e2e read. Actions are POSTs with the session's token (from the page's <meta>), each confirmed first in
// an in-page dialog; their answer (kubectl ads's own output, or the apiserver's refusal) is shown as is.
import { html, render } from 'htm/preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import css from './style.css';
import {
  TOKEN_HEADER,
  TOKEN_META,
  type ActionBody,
  type ActionName,
  type ActionResult,
  type Badge,
  type CanaryPodRow,
  type CellState,
  type ConditionView,
  type DetailView,
  type EventRow,
  type ListView,
  type NodeCell,
  type NodeGroups,
  type NodeMap,
  type RevisionRow,
  type RolloutPace,
  type RolloutProgress,
  type TimelineEntry,
} from '../views.ts';

const style = document.createElement('style');
style.textContent = css;
document.head.append(style);

/** The session's action token ('' when the dashboard is read-only). */
const TOKEN = ((document.querySelector(`meta[name="${TOKEN_META}"]`) as HTMLMetaElement | null)?.content ?? '').replace(
  /^%.*%$/,
  '',
);

/**
 * Subscribes to an SSE stream's `event` while mounted; `null` url subscribes to nothing. The data is cleared when
 * `identity` changes (another DaemonSet), kept while only the url's query changes (another grouping).
 */
function useStream<T>(url: string | null, event: string, identity = url): { data: T | undefined; live: boolean } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [live, setLive] = useState(false);
  useEffect(() => setData(undefined), [identity]);
  useEffect(() => {
    if (!url) return;
    const es = new EventSource(url);
    es.addEventListener(event, (e) => {
      setData(JSON.parse((e as MessageEvent<string>).data) as T);
      setLive(true);
    });
    es.onopen = () => setLive(true);
    // EventSource reconnects by itself; show it meanwhile.
    es.onerror = () => setLive(false);
    return () => es.close();
  }, [url, event]);
  return { data, live };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

const key = (r: { namespace: string; name: string }) => `${r.namespace}/${r.name}`;

function age(ms: number, now: number): string {
  if (!ms) return '-';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

/** "45s", "3m12s", "1h05m". */
function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

/** Updated of the allowed target (the partition, selector and canary allow), not of every desired node. */
function Progress({ progress, failed }: { progress: RolloutProgress; failed: boolean }) {
  const title = progress.exact
    ? `${progress.updated} updated of the ${progress.target} nodes the rollout may update now (${progress.desired} desired)`
    : `${progress.updated} updated; about ${progress.target} of ${progress.desired} may be updated (rollingUpdate.selector: exact in the detail)`;
  return html`<span class="progress" data-progress=${progress.text} title=${title}
    ><span class=${failed ? 'bar failed' : 'bar'}><span style=${{ width: `${progress.percent}%` }}></span></span>
    <span class="ptext">${progress.text}</span></span
  >`;
}

function Badges({ badges }: { badges: Badge[] }) {
  return html`${badges.map(
    (b) => html`<span class=${`badge ${b.tone}`} data-badge=${b.kind} title=${b.title}>${b.text}</span>`,
  )}`;
}

function DaemonSetTable({ view, selected }: { view: ListView; selected: string }) {
  if (view.daemonSets.length === 0)
    return html`<p class="empty">${view.synced ? `No Advanced DaemonSets in ${view.scope}.` : 'Listing…'}</p>`;
  return html`<table>
    <thead>
      <tr>
        <th>Namespace</th>
        <th>Name</th>
        <th>Strategy</th>
        <th>State</th>
        <th>Progress (updated / allowed)</th>
        <th class="num">Desired</th>
        <th class="num">Updated</th>
        <th class="num">Ready</th>
        <th class="num">Available</th>
        <th class="num">Unavailable</th>
        <th class="num">Partition</th>
        <th>Revision</th>
      </tr>
    </thead>
    <tbody>
      ${view.daemonSets.map(
        (r) =>
          html`<tr
            key=${key(r)}
            class=${`ds${key(r) === selected ? ' selected' : ''} st-${r.rollout.state}`}
            data-ds=${key(r)}
            data-state=${r.rollout.state}
            onClick=${() => (location.hash = `#/${key(r)}`)}
          >
            <td>${r.namespace}</td>
            <td><b>${r.name}</b></td>
            <td>${r.strategy}</td>
            <td class="badges"><${Badges} badges=${r.rollout.badges} /></td>
            <td><${Progress} progress=${r.rollout.progress} failed=${r.rollout.state === 'failed'} /></td>
            <td class="num">${r.desired}</td>
            <td class="num" data-updated>${r.updated}</td>
            <td class="num">${r.ready}</td>
            <td class="num">${r.available}</td>
            <td class="num">${r.unavailable}</td>
            <td class="num">${r.partition}</td>
            <td><code>${r.updateRevision || '-'}</code></td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** Colour per revision hash: the update revision green, older ones greys (newest darkest). */
function revisionColours(map: NodeMap): Map<string, string> {
  const greys = ['#6e7781', '#8c959f', '#afb8c1', '#57606a', '#d0d7de'];
  const out = new Map<string, string>();
  let i = 0;
  for (const r of map.revisions) out.set(r.hash, r.current ? '#1a7f37' : (greys[i++ % greys.length] as string));
  return out;
}

const STATE_TEXT: Record<CellState, string> = {
  available: 'available',
  unavailable: 'unavailable',
  terminating: 'terminating',
  'preparing-delete': 'PreparingDelete (preDelete hook)',
  missing: 'no pod yet',
};

function describeCell(c: NodeCell, map: NodeMap): string {
  const rev = map.revisions.find((r) => r.hash === c.hash);
  const parts = [
    c.node,
    c.pods.length > 0 ? c.pods.join(', ') : 'no pod',
    c.hash
      ? `revision ${rev?.number === undefined ? c.hash : `${rev.number} (${c.hash})`}${c.revision === 'new' ? ' = update revision' : ''}`
      : '',
    STATE_TEXT[c.state],
    c.hold === 'partition' ? `kept by partition ${map.partition}` : '',
    c.hold === 'selector' ? `kept: node not matched by rollingUpdate.selector ${map.rolloutSelector ?? ''}` : '',
    c.hold === 'canary' ? 'kept on the stable revision by the canary' : '',
    c.hold === 'wave' ? 'kept until its wave starts' : '',
    c.wave !== undefined ? `wave ${c.wave || '(no label)'}` : '',
    c.canary ? 'canary node' : '',
    c.misscheduled ? 'misscheduled' : '',
    c.waiting ? 'waits for its agents (readiness taint)' : '',
    c.setAside ? `set aside (${c.setAside}) by unhealthyNodes Ignore` : '',
  ];
  return parts.filter(Boolean).join(' · ');
}

function Cell({
  c,
  colour,
  title,
  picked,
  onPick,
}: {
  c: NodeCell;
  colour?: string;
  title: string;
  picked: boolean;
  onPick: () => void;
}) {
  return html`<div
    class=${picked ? 'cell picked' : 'cell'}
    style=${colour ? { '--c': colour } : undefined}
    data-node=${c.node}
    data-revision=${c.revision}
    data-hash=${c.hash}
    data-state=${c.state}
    data-hold=${c.hold}
    data-wave=${c.wave}
    data-canary=${c.canary ? 'true' : undefined}
    data-misscheduled=${c.misscheduled ? 'true' : undefined}
    data-waiting=${c.waiting ? 'true' : undefined}
    data-set-aside=${c.setAside}
    title=${title}
    onClick=${onPick}
  ></div>`;
}

function Swatch(props: Record<string, string | undefined>) {
  return html`<span class="cell" ...${props}></span>`;
}

function Legend({ map, colours }: { map: NodeMap; colours: Map<string, string> }) {
  const n = map.counts;
  const item = (count: number, label: string, swatch: Record<string, string | undefined>, data: string) =>
    html`<span class=${count ? 'item' : 'item zero'} data-count=${data} data-value=${count}
      ><${Swatch} ...${swatch} /> ${label} <b>${count}</b></span
    >`;
  return html`<div class="legend" data-legend="revisions">
      ${map.revisions.map(
        (r) =>
          html`<span class="item" data-revision-hash=${r.hash} data-pods=${r.pods}
            ><${Swatch} style=${`--c:${colours.get(r.hash) ?? ''}`} />
            ${r.current ? 'update revision' : 'revision'}${r.number === undefined ? '' : ` ${r.number}`}
            <code>${r.hash}</code> <b>${r.pods}</b></span
          >`,
      )}
      ${item(n.none, 'no pod', { 'data-revision': 'none' }, 'none')}
    </div>
    <div class="legend" data-legend="states">
      ${item(n.unavailable, 'unavailable', { 'data-state': 'unavailable', style: '--c:#fff' }, 'unavailable')}
      ${item(n.terminating, 'terminating', { 'data-state': 'terminating', style: '--c:#fff' }, 'terminating')}
      ${item(n.preparingDelete, 'PreparingDelete', { 'data-state': 'preparing-delete', style: '--c:#fff' }, 'preparingDelete')}
      ${item(n.missing, 'missing', { 'data-revision': 'none' }, 'missing')}
      ${item(n.heldByPartition, `kept by partition (${map.partition})`, { 'data-hold': 'partition' }, 'heldByPartition')}
      ${item(
        n.heldBySelector,
        `not matched by rollingUpdate.selector${map.rolloutSelector ? ` (${map.rolloutSelector})` : ''}`,
        { 'data-hold': 'selector' },
        'heldBySelector',
      )}
      ${item(n.heldByCanary, 'kept by the canary', { 'data-hold': 'canary' }, 'heldByCanary')}
      ${item(n.canary, 'canary', { 'data-canary': 'true' }, 'canary')}
    </div>`;
}

function NodeGrid({ map }: { map: NodeMap }) {
  const [filter, setFilter] = useState('');
  const [picked, setPicked] = useState<string | undefined>(undefined);
  const colours = useMemo(() => revisionColours(map), [map]);
  const cells = filter ? map.cells.filter((c) => c.node.includes(filter)) : map.cells;
  const pickedCell = picked ? map.cells.find((c) => c.node === picked) : undefined;
  return html`<${Legend} map=${map} colours=${colours} />
    <div class="toolbar">
      <input
        type="search"
        placeholder="filter nodes"
        value=${filter}
        onInput=${(e: Event) => setFilter((e.target as HTMLInputElement).value)}
      />
      <span
        >${cells.length} of ${map.counts.nodes} nodes${map.untargeted ? `, ${map.untargeted} not targeted` : ''}</span
      >
    </div>
    <div class="grid" data-grid>
      ${cells.map(
        (c) =>
          html`<${Cell}
            key=${c.node}
            c=${c}
            colour=${colours.get(c.hash)}
            title=${describeCell(c, map)}
            picked=${c.node === picked}
            onPick=${() => setPicked(c.node === picked ? undefined : c.node)}
          />`,
      )}
    </div>
    <div class="picked-info" data-picked>
      ${pickedCell ? describeCell(pickedCell, map) : 'Click a cell for its node.'}
    </div>`;
}

function Events({ events, timeline }: { events: EventRow[]; timeline: TimelineEntry[] }) {
  const now = Date.now();
  if (events.length === 0) return html`<p class="empty">No events.</p>`;
  const newest = events[0]?.last ?? 0;
  const moved = timeline.filter((e) => e.observed).at(-1)?.at ?? 0;
  // The apiserver lets 25 events per object through, then one per 5 minutes: a long rollout goes quiet here.
  const stale =
    moved - newest > 30_000
      ? html`<p class="note" data-events-stale>
          Newest event ${age(newest, now)} old while the status moved ${age(moved, now)} ago: the event spam filter (25
          per object, then 1 per 5 min) drops the rest. The timeline above follows the status.
        </p>`
      : null;
  return html`${stale}
    <table data-events>
      <thead>
        <tr>
          <th>Type</th>
          <th>Reason</th>
          <th class="num">Count</th>
          <th>Age</th>
          <th>From</th>
          <th>Message</th>
        </tr>
      </thead>
      <tbody>
        ${events.map(
          (e) =>
            html`<tr class=${`ev-${e.type}`} data-event-reason=${e.reason}>
              <td>${e.type}</td>
              <td>${e.reason}</td>
              <td class="num">${e.count}</td>
              <td>${age(e.last, now)}</td>
              <td>${e.from}</td>
              <td class="msg">${e.message}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

function ProgressingLine({ c }: { c: ConditionView | undefined }) {
  if (!c) return html`<div class="cond" data-progressing="">Progressing: no condition written yet</div>`;
  return html`<div class="cond" data-progressing=${`${c.status}/${c.reason}`}>
    <b>Progressing=${c.status}</b>${c.reason ? html` <code>${c.reason}</code>` : null}
    ${c.lastTransitionTime ? html`<span class="muted"> since ${age(c.lastTransitionTime, Date.now())}</span>` : null}
    ${c.message ? html`<div class="msg">${c.message}</div>` : null}
  </div>`;
}

function Pace({ pace }: { pace: RolloutPace | undefined }) {
  if (!pace) return null;
  const from = {
    observed: 'seen by the dashboard',
    revision: 'update revision created',
  };
  const span = `${Math.round(pace.windowMs / 60_000)} min`;
  return html`<div
    class="pace"
    data-pace
    data-elapsed=${pace.elapsedMs ?? ''}
    data-rate=${pace.perMinute ?? ''}
    data-eta=${pace.etaMs ?? ''}
  >
    <span
      >elapsed
      <b title=${pace.startedFrom ? `start: ${from[pace.startedFrom]}` : ''}
        >${pace.elapsedMs === undefined ? '-' : duration(pace.elapsedMs)}</b
      ></span
    >
    <span
      >rate <b>${pace.perMinute === undefined ? '-' : `${pace.perMinute.toFixed(pace.perMinute < 10 ? 1 : 0)}/min`}</b>
      <span class="muted">(last ${span})</span></span
    >
    <span
      >ETA to the allowed target
      <b
        >${pace.etaMs === undefined ? (pace.etaNote ?? '-') : pace.etaMs === 0 ? 'reached' : duration(pace.etaMs)}</b
      ></span
    >
  </div>`;
}

interface PlannedAction {
  action: ActionName;
  body: ActionBody;
  title: string;
  what: string;
  command: string;
  danger?: boolean;
}

interface ActionState {
  pending?: PlannedAction;
  running?: boolean;
  result?: { ok: boolean; status: number; message: string; warnings: string[]; command: string };
}

async function postAction(ns: string, name: string, a: PlannedAction): Promise<ActionState['result']> {
  const url = `api/daemonsets/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/actions/${a.action}`;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [TOKEN_HEADER]: TOKEN },
      body: JSON.stringify(a.body),
      // The page's policy is no-referrer, under which a POST's Origin would be "null"; the server checks Origin.
      referrerPolicy: 'same-origin',
      cache: 'no-store',
    });
    const body = (await res.json().catch(() => ({ ok: false, message: `HTTP ${res.status}` }))) as ActionResult;
    return {
      ok: res.ok && body.ok,
      status: res.status,
      message: body.message,
      warnings: body.warnings ?? [],
      command: a.command,
    };
  } catch (err) {
    return {
      ok: false,
      status: 0,
      message: `the dashboard did not answer: ${(err as Error).message}`,
      warnings: [],
      command: a.command,
    };
  }
}

function ConfirmDialog({ a, onOk, onCancel }: { a: PlannedAction; onOk: () => void; onCancel: () => void }) {
  const ok = useRef<HTMLButtonElement>(null);
  // The confirm button has the focus: Enter confirms, Escape cancels.
  useEffect(() => ok.current?.focus(), []);
  useEffect(() => {
    const esc = (e: KeyboardEvent) => e.key === 'Escape' && onCancel();
    addEventListener('keydown', esc);
    return () => removeEventListener('keydown', esc);
  }, [onCancel]);
  return html`<div class="overlay" onClick=${onCancel}>
    <div
      class="dialog"
      role="dialog"
      aria-modal="true"
      aria-labelledby="confirm-title"
      data-confirm=${a.action}
      onClick=${(e: Event) => e.stopPropagation()}
    >
      <h3 id="confirm-title">${a.title}</h3>
      <p>${a.what}</p>
      <p class="muted">Same as <code>${a.command}</code>, with your kubeconfig's rights.</p>
      <div class="buttons">
        <button type="button" data-confirm-cancel onClick=${onCancel}>Cancel</button>
        <button type="button" class=${a.danger ? 'danger' : 'primary'} data-confirm-ok onClick=${onOk} ref=${ok}>
          ${a.title.replace(/\?$/, '')}
        </button>
      </div>
    </div>
  </div>`;
}

function Actions({ view }: { view: DetailView }) {
  const row = view.row!;
  const [state, setState] = useState<ActionState>({});
  const [partition, setPartition] = useState('');
  const [step, setStep] = useState('1');
  if (!TOKEN)
    return html`<div class="actions" data-actions="off"><span class="muted">read-only (--read-only)</span></div>`;
  const ns = view.namespace;
  const name = view.name;
  const cmd = (words: string) => `kubectl ads ${words} -n ${ns}`;
  const undo = view.revisionRows?.find((r) => r.undoTarget);
  const plan = (a: PlannedAction) => setState({ pending: a, result: state.result });
  const run = async () => {
    const a = state.pending;
    if (!a) return;
    setState({ running: true });
    setState({ result: await postAction(ns, name, a) });
  };
  const canary = (word: 'promote' | 'pause' | 'resume' | 'fail', what: string, danger = false) =>
    html`<button
      type="button"
      data-action=${`canary-${word}`}
      onClick=${() =>
        plan({
          action: `canary-${word}` as ActionName,
          body: {},
          title: `${word[0]!.toUpperCase()}${word.slice(1)} the canary?`,
          what,
          command: cmd(`canary ${word} ${name}`),
          danger,
        })}
    >
      canary ${word}
    </button>`;
  const r = state.result;
  return html`<div class="actions" data-actions="on">
      ${
        row.paused
          ? html`<button
              type="button"
              data-action="resume"
              onClick=${() =>
                plan({
                  action: 'resume',
                  body: {},
                  title: `Resume ${name}?`,
                  what: 'Clears spec.updateStrategy.rollingUpdate.paused: the rolling update goes on.',
                  command: cmd(`resume ${name}`),
                })}
            >
              Resume
            </button>`
          : html`<button
              type="button"
              data-action="pause"
              onClick=${() =>
                plan({
                  action: 'pause',
                  body: {},
                  title: `Pause ${name}?`,
                  what: 'Sets spec.updateStrategy.rollingUpdate.paused=true: the controller stops replacing old pods (it still creates missing ones).',
                  command: cmd(`pause ${name}`),
                })}
            >
              Pause
            </button>`
      }
      <span class="group">
        <label>partition <b>${row.partition}</b></label>
        <input
          data-partition-input
          placeholder="N or N%"
          size="6"
          value=${partition}
          onInput=${(e: Event) => setPartition((e.target as HTMLInputElement).value.trim())}
        />
        <button
          type="button"
          data-action="partition"
          disabled=${partition === ''}
          onClick=${() =>
            plan({
              action: 'partition',
              body: { value: partition },
              title: `Set the partition of ${name} to ${partition}?`,
              what: `Sets spec.updateStrategy.rollingUpdate.partition=${partition}: that many nodes keep the old revision (the lowest names not updated yet).`,
              command: cmd(`partition ${name} ${partition}`),
            })}
        >
          Set
        </button>
        <input
          data-step-input
          size="3"
          value=${step}
          onInput=${(e: Event) => setStep((e.target as HTMLInputElement).value.trim())}
        />
        <button
          type="button"
          data-action="partition-step"
          onClick=${() =>
            plan({
              action: 'partition-step',
              body: { step },
              title: `Lower the partition of ${name} by ${step}?`,
              what: `Lowers the partition in effect by ${step} node(s), never below 0: that many more nodes may be updated.`,
              command: cmd(`partition ${name} --step ${step}`),
            })}
        >
          Step down
        </button>
      </span>
      ${
        row.hasCanary
          ? html`<span class="group">
              ${canary('promote', 'Validates the canary (annotation canary-validated=<revision>): the rolling update takes over from the canary nodes.')}
              ${canary('pause', 'Holds the canary where it is (annotation canary-paused=true).')}
              ${canary('resume', 'Resumes a paused canary (also one autoPause paused).')}
              ${canary('fail', 'Fails the canary: its nodes go back to the stable revision; the rollout is held until the template changes.', true)}
            </span>`
          : null
      }
      ${
        undo
          ? html`<button
              type="button"
              class="danger-outline"
              data-action="undo"
              onClick=${() =>
                plan({
                  action: 'undo',
                  body: { toRevision: undo.number },
                  title: `Roll ${name} back to revision ${undo.number}?`,
                  what: `Replaces the pod template with revision ${undo.number}'s (${undo.images.join(', ')}): a new rollout starts, within partition and selector.`,
                  command: cmd(`undo ${name} --to-revision ${undo.number}`),
                  danger: true,
                })}
            >
              Undo to revision ${undo.number}
            </button>`
          : null
      }
    </div>
    ${state.running ? html`<div class="result" data-action-result="running">running…</div>` : null}
    ${
      r
        ? html`<div
            class=${r.ok ? 'result ok' : 'result bad'}
            data-action-result=${r.ok ? 'ok' : 'error'}
            data-status=${r.status}
          >
            <code>${r.command}</code>: <span class="msg" data-action-message>${r.message}</span>
            ${r.warnings.map((w) => html`<div class="warn">${w}</div>`)}
          </div>`
        : null
    }
    ${
      state.pending
        ? html`<${ConfirmDialog} a=${state.pending} onOk=${run} onCancel=${() => setState({ result: state.result })} />`
        : null
    }`;
}

function Groups({ groups, onKey }: { groups: NodeGroups | undefined; onKey: (k: string) => void }) {
  if (!groups) return null;
  const label = (v: string) => (v === '' ? html`<span class="muted">(no label)</span>` : v);
  const line = (g: NodeGroups['rows'][number], value: unknown) =>
    html`<tr data-group=${g.value}>
      <td>${value}</td>
      <td class="num" data-col="nodes">${g.nodes}</td>
      <td class="num" data-col="new">${g.new}</td>
      <td class="num" data-col="old">${g.old}</td>
      <td class="num" data-col="none">${g.none}</td>
      <td class="num" data-col="unavailable">${g.unavailable}</td>
      <td class="num" data-col="held">${g.held}</td>
    </tr>`;
  return html`<div data-groups=${groups.key}>
    <div class="toolbar">
      <label
        >group nodes by
        <select
          data-group-by
          value=${groups.key}
          onChange=${(e: Event) => onKey((e.target as HTMLSelectElement).value)}
        >
          ${groups.keys.map((k) => html`<option value=${k} selected=${k === groups.key}>${k}</option>`)}
        </select></label
      >
    </div>
    <table>
      <thead>
        <tr>
          <th title=${groups.key}>Value</th>
          <th class="num">Nodes</th>
          <th class="num">Updated</th>
          <th class="num">Old</th>
          <th class="num">No pod</th>
          <th class="num">Unavailable</th>
          <th class="num">Held</th>
        </tr>
      </thead>
      <tbody>
        ${groups.rows.map((g) => line(g, label(g.value)))}
        ${groups.other ? line(groups.other, html`<span class="muted">(${groups.folded} more values)</span>`) : null}
      </tbody>
    </table>
  </div>`;
}

function Revisions({ rows }: { rows: RevisionRow[] | undefined }) {
  if (!rows || rows.length === 0) return html`<p class="empty">No ControllerRevisions.</p>`;
  return html`<table data-revisions>
    <thead>
      <tr>
        <th class="num">Revision</th>
        <th>Hash</th>
        <th>Images</th>
        <th class="num">Pods</th>
        <th></th>
        <th>Change cause</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr data-revision-number=${r.number} data-update=${String(r.update)} data-undo=${String(r.undoTarget)}>
            <td class="num">${r.number}</td>
            <td><code>${r.hash}</code></td>
            <td class="msg">${r.images.map((i) => html`<code class="img">${i}</code> `)}</td>
            <td class="num">${r.pods}</td>
            <td>
              ${r.update ? html`<span class="badge ok">update revision</span>` : null}
              ${r.stable ? html`<span class="badge info">canary stable</span>` : null}
              ${r.undoTarget ? html`<span class="badge">undo target</span>` : null}
            </td>
            <td class="msg">${r.changeCause}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function CanaryPods({ rows }: { rows: CanaryPodRow[] }) {
  return html`<table data-canary-pods>
    <thead>
      <tr>
        <th>Node</th>
        <th>Pod</th>
        <th>Revision</th>
        <th>Ready</th>
        <th class="num">Restarts</th>
        <th>Reason</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (p) =>
          html`<tr data-canary-pod=${p.pod} class=${p.restarts > 0 || p.reason ? 'warnrow' : ''}>
            <td>${p.node}</td>
            <td><code>${p.pod}</code></td>
            <td>${p.revision === 'new' ? 'update' : 'stable/old'}</td>
            <td>${p.ready ? 'yes' : 'no'}</td>
            <td class="num" data-restarts=${p.restarts}>${p.restarts}</td>
            <td>${p.reason}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function Timeline({ entries }: { entries: TimelineEntry[] }) {
  if (entries.length === 0) return html`<p class="empty">Nothing seen yet.</p>`;
  return html`<ol class="timeline" data-timeline>
    ${[...entries].reverse().map(
      (e) =>
        html`<li data-timeline-kind=${e.kind} class=${`tl-${e.kind}${e.observed ? '' : ' from-status'}`}>
          <span class="at" title=${e.observed ? 'seen changing by the dashboard' : 'a timestamp on the object'}
            >${clock(e.at)}</span
          >
          <span class="kind">${e.kind}</span>
          <span class="msg">${e.text}</span>
        </li>`,
    )}
  </ol>`;
}

function Detail({ view, onGroupKey }: { view: DetailView; onGroupKey: (k: string) => void }) {
  if (!view.found || !view.row || !view.map)
    return html`<section><p class="empty">${view.synced ? `${key(view)} not found.` : 'Loading…'}</p></section>`;
  const { row, map } = view;
  const rollout = row.rollout;
  return html`<section
      data-detail=${key(view)}
      data-synced=${String(view.synced)}
      data-update-revision=${map.updateRevision}
      data-state=${rollout.state}
      class=${`detail st-${rollout.state}`}
    >
      <h2>
        ${key(view)} <span class="badges" data-detail-badges><${Badges} badges=${rollout.badges} /></span>
      </h2>
      <div class="rollout">
        <div class="message" data-rollout-message>${rollout.message}</div>
        <${Progress} progress=${rollout.progress} failed=${rollout.state === 'failed'} />
        <${Pace} pace=${view.pace} />
        <${ProgressingLine} c=${view.progressing} />
      </div>
      <${Actions} key=${key(view)} view=${view} />
      <div class="facts">
        <span>strategy <b>${map.strategy}</b></span>
        <span>update revision <code>${map.updateRevision || '-'}</code></span>
        <span>partition <b>${row.partition}</b>${row.partition.endsWith('%') ? ` (${map.partition} nodes)` : ''}</span>
        <span>rollingUpdate.selector <code>${map.rolloutSelector ?? '-'}</code></span>
        <span>canary <b>${map.canary ? `${map.canary.phase} (${map.canary.nodes} nodes)` : '-'}</b></span>
        ${
          map.wave
            ? html`<span data-wave=${map.wave.index}
                >wave <b>${map.wave.index} of ${map.wave.count}</b> <code>${map.wave.which}</code>${
                  map.wave.waiting ? ' (waiting for availableSeconds)' : ''
                }</span
              >`
            : null
        }
        <span>updated <b>${row.updated}</b> / ${row.desired}</span>
        ${map.paused ? html`<span class="badge warn">paused</span>` : null}
      </div>
      <${NodeGrid} map=${map} />
    </section>
    <div class="cols">
      <section>
        <h2>Nodes by label</h2>
        <${Groups} groups=${view.groups} onKey=${onGroupKey} />
      </section>
      <section class="scroll">
        <h2>Timeline <span class="muted">(from the status, as the dashboard saw it change)</span></h2>
        <${Timeline} entries=${view.timeline ?? []} />
      </section>
    </div>
    <section>
      <h2>Revisions</h2>
      <${Revisions} rows=${view.revisionRows} />
    </section>
    ${
      view.canaryPods && view.canaryPods.length > 0
        ? html`<section>
            <h2>Canary pods</h2>
            <${CanaryPods} rows=${view.canaryPods} />
          </section>`
        : null
    }
    <section class="events">
      <h2>Events</h2>
      <${Events} events=${view.events} timeline=${view.timeline ?? []} />
    </section>`;
}

function App() {
  const { data: list, live } = useStream<ListView>('api/stream', 'list');
  const hash = useHash();
  const [groupBy, setGroupBy] = useState('');
  const fromHash = decodeURIComponent(hash.replace(/^#\/?/, ''));
  const selected = fromHash || (list?.daemonSets[0] ? key(list.daemonSets[0]) : '');
  const [ns, name] = selected.split('/');
  const base = ns && name ? `api/daemonsets/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/stream` : null;
  const detailUrl = base && groupBy ? `${base}?groupBy=${encodeURIComponent(groupBy)}` : base;
  const { data: detail } = useStream<DetailView>(detailUrl, 'detail', base);
  return html`<header>
      <h1>Advanced DaemonSet rollouts</h1>
      <span class="scope">${list ? `${list.scope} · ${list.server}` : ''}</span>
      <span class=${live ? 'conn live' : 'conn down'} data-live=${String(live)}>${live ? 'live' : 'reconnecting'}</span>
    </header>
    <main>
      <section>
        <h2>DaemonSets</h2>
        ${list ? html`<${DaemonSetTable} view=${list} selected=${selected} />` : html`<p class="empty">Connecting…</p>`}
      </section>
      ${detail ? html`<${Detail} view=${detail} onGroupKey=${setGroupBy} />` : null}
    </main>`;
}

render(html`<${App} />`, document.body);
