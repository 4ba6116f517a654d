// Runs the helm binary the control-plane build provides (e2e/hack/build-control-plane.sh) over
// charts/advanced-daemonset, and parses what it renders.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { binaries, repoRoot, versions } from '../../e2e/cluster/binaries.ts';

export const chartDir = join(repoRoot, 'charts', 'advanced-daemonset');
export const ciValues = (name: string) => join(chartDir, 'ci', `${name}-values.yaml`);
export const helmPath = () => binaries().helm;
export const helmMissing = () =>
  existsSync(helmPath()) ? false : `helm not found at ${helmPath()}: run e2e/hack/build-control-plane.sh (builds it)`;

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function helm(args: string[], env: NodeJS.ProcessEnv = {}): Promise<HelmResult> {
  return new Promise((resolve, reject) => {
    execFile(
      helmPath(),
      args,
      { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } },
      (err, stdout, stderr) => {
        if (err && typeof (err as { code?: unknown }).code !== 'number') reject(err);
        else resolve({ code: err ? (err as { code: number }).code : 0, stdout, stderr });
      },
    );
  });
}

/** Fails with helm's own message when the command fails. */
export async function helmOk(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const r = await helm(args, env);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed (exit ${r.code}):\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** A rendered Kubernetes object, loosely typed for assertions. */
export interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [key: string]: any;
}

export function parseManifests(text: string): Rendered[] {
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`rendered YAML does not parse: ${d.errors[0]!.message}`);
      return d.toJSON() as Rendered | null;
    })
    .filter((o): o is Rendered => o !== null && typeof o === 'object');
}

export interface TemplateOptions {
  release?: string;
  namespace?: string;
  valuesFiles?: string[];
  set?: string[];
  extra?: string[];
}

export function templateArgs(o: TemplateOptions = {}): string[] {
  return [
    'template',
    o.release ?? 'ads',
    chartDir,
    '--namespace',
    o.namespace ?? 'kruise-system',
    // helm built from source defaults to Kubernetes v1.20; render for the version we test on.
    '--kube-version',
    versions.kubernetes,
    ...(o.valuesFiles ?? []).flatMap((f) => ['-f', f]),
    ...(o.set ?? []).flatMap((s) => ['--set', s]),
    ...(o.extra ?? []),
  ];
}

export async function render(o: TemplateOptions = {}): Promise<Rendered[]> {
  return parseManifests(await helmOk(templateArgs(o)));
}

export function find(objects: Rendered[], kind: string, name?: string): Rendered {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) {
    throw new Error(
      `expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`,
    );
  }
  return found[0]!;
}
