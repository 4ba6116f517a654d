// kubectl's output shapes: aligned columns (printers.GetNewTabWriter: minwidth 6, padding 3), ages
// (k8s.io/apimachinery/pkg/util/duration HumanDuration), `kind.group/name operation` lines (the name printer) and
// -o json|yaml of one object or a List.
import { stringify as toYaml } from 'yaml';

/** Columns separated as kubectl's tabwriter: each but the last padded to its widest cell + 3 (at least 6). */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(6, ...all.map((r) => (r[i] ?? '').length + 3)));
  return all
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] as number)))
        .join('')
        .trimEnd(),
    )
    .join('\n');
}

/** HumanDuration: "45s", "3m5s", "12m", "5h3m", "9h", "3d4h", "120d", "2y30d", "9y". */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(seconds / 3600);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8)
    return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24) % 365;
    const years = Math.floor(hours / 24 / 365);
    return days === 0 ? `${years}y` : `${years}y${days}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** The AGE cell of an object created at `creationTimestamp` (RFC 3339), seen at `now` (ms). */
export function age(creationTimestamp: string | undefined, now: number): string {
  const t = creationTimestamp ? Date.parse(creationTimestamp) : NaN;
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
}

/** The resource as kubectl's name printer writes it for our kind. */
export const ADS_KIND_GROUP = 'daemonset.apps.kruise.io';
/** The plural resource as the apiserver words its errors. */
export const ADS_RESOURCE = 'daemonsets.apps.kruise.io';

/** `daemonset.apps.kruise.io/<name> <operation>` (the name printer with an operation, as `kubectl rollout pause`). */
export function nameLine(name: string, operation?: string): string {
  return `${ADS_KIND_GROUP}/${name}${operation ? ` ${operation}` : ''}`;
}

export type OutputFormat = 'json' | 'yaml' | 'wide' | 'name';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['json', 'yaml', 'wide', 'name'];

/** One object, or several as a List (what `kubectl get -o json` prints for a list). */
export function formatObjects(objects: readonly unknown[], format: 'json' | 'yaml', single: boolean): string {
  const value = single
    ? objects[0]
    : { apiVersion: 'v1', items: objects, kind: 'List', metadata: { resourceVersion: '' } };
  return format === 'json' ? JSON.stringify(value, null, 4) : toYaml(value).trimEnd();
}
