// The chart README's values table, generated from values.yaml's `# --` comments and values.schema.json's types, in
// helm-docs' convention (https://github.com/norwoodj/helm-docs: a `# --` comment above a key documents it; a
// documented map is one row, an undocumented one is walked). Written by hand instead of running helm-docs: that is a
// Go binary outside the tools this repository builds, and its output is ~40 lines of template away from this.
// `npm run gen:chart-readme` rewrites the table; test/chart/chart.test.ts fails when it is not current.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isScalar, parseDocument, type Pair, type YAMLMap } from 'yaml';
import { isMainModule } from '../src/cli/main-module.ts';

export const CHART_DIR = join(import.meta.dirname, '..', 'charts', 'advanced-daemonset');
const BEGIN = '<!-- values:begin (generated from values.yaml by npm run gen:chart-readme; do not edit) -->';
const END = '<!-- values:end -->';

export interface ValueRow {
  key: string;
  type: string;
  default: unknown;
  description: string;
}

interface SchemaNode {
  type?: string | string[];
  properties?: Record<string, SchemaNode>;
}

/** The `# --` part of a comment block (lines after the last line that starts with `--`), as one line. */
function docOf(comment: string | undefined | null): string | undefined {
  if (!comment) return undefined;
  const lines = comment.split('\n').map((l) => l.trim());
  const start = lines.findLastIndex((l) => l.startsWith('--'));
  if (start < 0) return undefined;
  return lines
    .slice(start)
    .join(' ')
    .replace(/^--\s*/, '')
    .trim();
}

function typeOf(schema: SchemaNode | undefined, value: unknown): string {
  const t = schema?.type;
  if (t) return Array.isArray(t) ? t.join(' or ') : t;
  if (Array.isArray(value)) return 'array';
  return value === null ? 'null' : typeof value === 'object' ? 'object' : typeof value;
}

/** Every documented value of values.yaml, in file order. */
export function valueRows(valuesYaml: string, schema: SchemaNode): ValueRow[] {
  const rows: ValueRow[] = [];
  const walk = (map: YAMLMap, path: string[], schemaNode: SchemaNode | undefined) => {
    map.items.forEach((pair: Pair, i) => {
      const key = String(isScalar(pair.key) ? pair.key.value : pair.key);
      const own = isScalar(pair.key) ? pair.key.commentBefore : undefined;
      // yaml puts the comment above a map's first key on the map itself.
      const doc = docOf(own ?? (i === 0 ? map.commentBefore : undefined));
      const childSchema = schemaNode?.properties?.[key];
      const value: unknown = (pair.value as { toJSON?: () => unknown } | null)?.toJSON?.() ?? null;
      if (doc === undefined && isMap(pair.value) && pair.value.items.length > 0) {
        walk(pair.value, [...path, key], childSchema);
        return;
      }
      rows.push({
        key: [...path, key].join('.'),
        type: typeOf(childSchema, value),
        default: value,
        description: doc ?? '',
      });
    });
  };
  const doc = parseDocument(valuesYaml);
  if (isMap(doc.contents)) walk(doc.contents, [], schema);
  return rows;
}

// A `|` would end the cell; `<release>` would be read as an HTML tag and vanish.
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function valuesTable(rows: ValueRow[]): string {
  return [
    '| value | type | default | description |',
    '|---|---|---|---|',
    ...rows.map(
      (r) => `| \`${r.key}\` | ${r.type} | \`${cell(JSON.stringify(r.default))}\` | ${cell(r.description)} |`,
    ),
  ].join('\n');
}

/** The README with its values table replaced by `table`. */
export function withValuesTable(readme: string, table: string): string {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`the chart README has no ${BEGIN} ... ${END} markers`);
  return `${readme.slice(0, begin)}${BEGIN}\n\n${table}\n\n${readme.slice(end)}`;
}

/** The chart README as the generator writes it. */
export function generatedChartReadme(): string {
  const rows = valueRows(
    readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'),
    JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as SchemaNode,
  );
  return withValuesTable(readFileSync(join(CHART_DIR, 'README.md'), 'utf8'), valuesTable(rows));
}

if (isMainModule(import.meta.url)) {
  writeFileSync(join(CHART_DIR, 'README.md'), generatedChartReadme());
}
