// The PromQL the chart ships (PrometheusRule expressions, Grafana dashboard queries), read out of the rendered
// objects and parsed with the Prometheus project's own grammar (@prometheus-io/lezer-promql, the parser of the
// Prometheus UI), to name the metrics each query reads. Used by test/chart (every query parses) and by
// e2e/metrics (every metric named is one the manager exports).
import { parser } from '@prometheus-io/lezer-promql';
import type { Rendered } from './helm.ts';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

/** A query the chart ships and where it is (for messages). */
export interface ShippedQuery {
  where: string;
  expr: string;
}

/**
 * Grafana's query text as PromQL: its interval variables (only valid where a range or duration goes) become a
 * duration; other variables are used only inside label matcher strings, where they are plain text.
 */
export function grafanaToPromQL(query: string): string {
  return query.replace(/\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}/g, '5m');
}

/**
 * A Grafana template variable's query: `label_values(<selector>, label)` (and metrics(), query_result()) is
 * Grafana's, not PromQL; the PromQL inside it is returned, or undefined for `label_values(label)`.
 */
export function variableQueryPromQL(query: string): string | undefined {
  const m = /^\s*label_values\(\s*(.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$/s.exec(query);
  if (m) return grafanaToPromQL(m[1]!);
  const q = /^\s*query_result\(\s*(.*)\s*\)\s*$/s.exec(query);
  if (q) return grafanaToPromQL(q[1]!);
  if (/^\s*label_values\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$/.test(query)) return undefined;
  return grafanaToPromQL(query);
}

const unquote = (literal: string): string =>
  JSON.parse(literal.startsWith("'") ? `"${literal.slice(1, -1)}"` : literal);

function child(node: SyntaxNode, name: string): SyntaxNode | null {
  for (let c = node.firstChild; c; c = c.nextSibling) if (c.name === name) return c;
  return null;
}

/** The metric a vector selector reads: its name, or its `__name__="..."` (or quoted UTF-8 name) matcher. */
function selectorMetric(node: SyntaxNode, text: string, expr: string): string {
  const id = child(node, 'Identifier');
  if (id) return text.slice(id.from, id.to);
  const matchers = child(node, 'LabelMatchers');
  for (let m = matchers?.firstChild ?? null; m; m = m.nextSibling) {
    if (m.name === 'QuotedLabelName') return unquote(text.slice(m.from, m.to));
    const label = child(m, 'LabelName') ?? child(m, 'QuotedLabelName');
    const op = child(m, 'MatchOp');
    const value = child(m, 'StringLiteral');
    if (!label || !op || !value) continue;
    const raw = text.slice(label.from, label.to);
    const labelName = label.name === 'QuotedLabelName' ? unquote(raw) : raw;
    if (labelName !== '__name__') continue;
    if (text.slice(op.from, op.to) !== '=') {
      throw new Error(`cannot tell which metric __name__${text.slice(op.from, op.to)} reads in: ${expr}`);
    }
    return unquote(text.slice(value.from, value.to));
  }
  throw new Error(`a selector without a metric name in: ${expr}`);
}

/** The metric names a PromQL expression reads, sorted; throws, with the position, on a syntax error. */
export function metricNames(expr: string): string[] {
  const tree = parser.parse(expr);
  const names = new Set<string>();
  let error: number | undefined;
  const stack: SyntaxNode[] = [tree.topNode];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.type.isError) error ??= node.from;
    if (node.name === 'VectorSelector') names.add(selectorMetric(node, expr, expr));
    for (let c = node.firstChild; c; c = c.nextSibling) stack.push(c);
  }
  if (error !== undefined) {
    throw new Error(
      `PromQL syntax error at offset ${error} (near ${JSON.stringify(expr.slice(error, error + 20))}) in: ${expr}`,
    );
  }
  return [...names].sort();
}

/** Every alert and recording rule expression of the rendered PrometheusRules. */
export function ruleQueries(objects: Rendered[]): ShippedQuery[] {
  return objects
    .filter((o) => o.kind === 'PrometheusRule')
    .flatMap((o) =>
      (o.spec.groups as { name: string; rules: { alert?: string; record?: string; expr: string }[] }[]).flatMap((g) =>
        g.rules.map((r) => ({
          where: `PrometheusRule ${o.metadata.name} group ${g.name} ${r.alert ?? r.record}`,
          expr: String(r.expr),
        })),
      ),
    );
}

interface Panel {
  title?: string;
  targets?: { expr?: string; refId?: string }[];
  panels?: Panel[];
}
interface Dashboard {
  title: string;
  panels?: Panel[];
  templating?: { list?: { name: string; type: string; query?: string | { query?: string } }[] };
}

/** Every panel query (rows' panels included) and query-variable query of a Grafana dashboard, as PromQL. */
export function dashboardQueries(dashboard: Dashboard): ShippedQuery[] {
  const out: ShippedQuery[] = [];
  const visit = (panels: Panel[] | undefined) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) {
        if (t.expr) out.push({ where: `panel "${p.title}" ${t.refId ?? ''}`.trim(), expr: grafanaToPromQL(t.expr) });
      }
      visit(p.panels);
    }
  };
  visit(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    const expr = q === undefined ? undefined : variableQueryPromQL(q);
    if (expr) out.push({ where: `variable $${v.name}`, expr });
  }
  return out;
}

/** The dashboards of the rendered ConfigMaps labelled for Grafana's sidecar, parsed. */
export function renderedDashboards(objects: Rendered[]): { where: string; dashboard: Dashboard }[] {
  return objects
    .filter((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard !== undefined)
    .flatMap((o) =>
      Object.entries(o.data as Record<string, string>).map(([file, json]) => ({
        where: `ConfigMap ${o.metadata.name} ${file}`,
        dashboard: JSON.parse(json) as Dashboard,
      })),
    );
}

/** Every query the rendered chart ships: rule expressions and dashboard queries. */
export function shippedQueries(objects: Rendered[]): ShippedQuery[] {
  return [
    ...ruleQueries(objects),
    ...renderedDashboards(objects).flatMap(({ where, dashboard }) =>
      dashboardQueries(dashboard).map((q) => ({ ...q, where: `${where}: ${q.where}` })),
    ),
  ];
}

/** What a /metrics page exports: sample names, and each metric family's declared type. */
export interface Exposition {
  sampleNames: ReadonlySet<string>;
  types: ReadonlyMap<string, string>;
}

/**
 * Whether `name` is exported: a family (# TYPE) or a sample of that name, or a histogram's (summary's) series:
 * `<h>_bucket`, `<h>_sum`, `<h>_count` of a family `<h>` of type histogram (`_sum`, `_count` of a summary).
 */
export function isExported(name: string, e: Exposition): boolean {
  if (e.sampleNames.has(name) || e.types.has(name)) return true;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (!m) return false;
  const type = e.types.get(m[1]!);
  return type === 'histogram' || (m[2] !== 'bucket' && type === 'summary');
}
