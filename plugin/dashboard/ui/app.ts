// The dashboard page: preact + htm, fed by server-sent events (the server pushes whole views, throttled; the page
// only renders). `#/<namespace>/<name>` selects a DaemonSet; without one the first is shown.
// Cells and event rows carry data-* attributes (revision, state, hold, canary) that both the CSS and the e2e read.
import { html, render } from 'htm/preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import css from './style.css';
import type { CellState, DaemonSetRow, DetailView, EventRow, ListView, NodeCell, NodeMap } from '../views.ts';

const style = document.createElement('style');
style.textContent = css;
document.head.append(style);

/** Subscribes to an SSE stream's `event` while mounted; `null` url subscribes to nothing. */
function useStream<T>(url: string | null, event: string): { data: T | undefined; live: boolean } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [live, setLive] = useState(false);
  useEffect(() => {
    setData(undefined);
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

function Progress({ row }: { row: DaemonSetRow }) {
  const pct = row.desired > 0 ? Math.round((100 * row.updated) / row.desired) : 0;
  return html`<span class="bar" title=${`${row.updated} of ${row.desired} updated`}
      ><span style=${{ width: `${pct}%` }}></span
    ></span>
    ${pct}%`;
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
        <th>Progress</th>
        <th class="num">Desired</th>
        <th class="num">Updated</th>
        <th class="num">Ready</th>
        <th class="num">Available</th>
        <th class="num">Unavailable</th>
        <th class="num">Partition</th>
        <th>Canary</th>
        <th>Revision</th>
        <th></th>
      </tr>
    </thead>
    <tbody>
      ${view.daemonSets.map(
        (r) =>
          html`<tr
            key=${key(r)}
            class=${`ds${key(r) === selected ? ' selected' : ''}`}
            data-ds=${key(r)}
            onClick=${() => (location.hash = `#/${key(r)}`)}
          >
            <td>${r.namespace}</td>
            <td><b>${r.name}</b></td>
            <td>${r.strategy}</td>
            <td><${Progress} row=${r} /></td>
            <td class="num">${r.desired}</td>
            <td class="num" data-updated>${r.updated}</td>
            <td class="num">${r.ready}</td>
            <td class="num">${r.available}</td>
            <td class="num">${r.unavailable}</td>
            <td class="num">${r.partition}</td>
            <td>${r.canary}</td>
            <td><code>${r.updateRevision || '-'}</code></td>
            <td>
              ${r.paused ? html`<span class="badge warn">paused</span>` : null}
              ${!r.observed ? html`<span class="badge">not observed</span>` : null}
              ${r.complete ? html`<span class="badge ok">complete</span>` : null}
            </td>
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
    c.canary ? 'canary node' : '',
    c.misscheduled ? 'misscheduled' : '',
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
    data-canary=${c.canary ? 'true' : undefined}
    data-misscheduled=${c.misscheduled ? 'true' : undefined}
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

function Events({ events }: { events: EventRow[] }) {
  const now = Date.now();
  if (events.length === 0) return html`<p class="empty">No events.</p>`;
  return html`<table data-events>
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

function Detail({ view }: { view: DetailView }) {
  if (!view.found || !view.row || !view.map)
    return html`<section><p class="empty">${view.synced ? `${key(view)} not found.` : 'Loading…'}</p></section>`;
  const { row, map } = view;
  return html`<section
      data-detail=${key(view)}
      data-synced=${String(view.synced)}
      data-update-revision=${map.updateRevision}
    >
      <h2>${key(view)}</h2>
      <div class="facts">
        <span>strategy <b>${map.strategy}</b></span>
        <span>update revision <code>${map.updateRevision || '-'}</code></span>
        <span>partition <b>${row.partition}</b>${row.partition.endsWith('%') ? ` (${map.partition} nodes)` : ''}</span>
        <span>rollingUpdate.selector <code>${map.rolloutSelector ?? '-'}</code></span>
        <span>canary <b>${map.canary ? `${map.canary.phase} (${map.canary.nodes} nodes)` : '-'}</b></span>
        <span>updated <b>${row.updated}</b> / ${row.desired}</span>
        ${map.paused ? html`<span class="badge warn">paused</span>` : null}
      </div>
      <${NodeGrid} map=${map} />
    </section>
    <section class="events">
      <h2>Events</h2>
      <${Events} events=${view.events} />
    </section>`;
}

function App() {
  const { data: list, live } = useStream<ListView>('api/stream', 'list');
  const hash = useHash();
  const fromHash = decodeURIComponent(hash.replace(/^#\/?/, ''));
  const selected = fromHash || (list?.daemonSets[0] ? key(list.daemonSets[0]) : '');
  const [ns, name] = selected.split('/');
  const detailUrl = ns && name ? `api/daemonsets/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/stream` : null;
  const { data: detail } = useStream<DetailView>(detailUrl, 'detail');
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
      ${detail ? html`<${Detail} view=${detail} />` : null}
    </main>`;
}

render(html`<${App} />`, document.body);
