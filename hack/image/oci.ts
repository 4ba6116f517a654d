// Builds and pushes OCI images without Docker: layers are tarballs made with GNU tar, deterministic (sorted, mtime 0,
// numeric owners; https://reproducible-builds.org/docs/archives/), gzipped here, and crane
// (go-containerregistry, built by e2e/hack/build-node.sh) pushes them onto an empty base and sets the config.
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { basename } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { UserError } from '../../src/cli/command.ts';
import { craneBinary } from './tools.ts';

/** The part of an image config (https://github.com/opencontainers/image-spec/blob/main/config.md) we set. */
export interface ImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  /** KEY=VALUE, in order. */
  env?: string[];
  user?: string;
  workdir?: string;
  /** "8080/tcp" */
  exposedPorts?: string[];
  labels?: Record<string, string>;
}

export interface PushedImage {
  /** REGISTRY/NAME:TAG as pushed. */
  ref: string;
  /** sha256:... of the manifest. */
  digest: string;
  /** The bytes a pull transfers: the compressed layers and the config. */
  compressedBytes: number;
  layers: { digest: string; size: number }[];
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  input?: string;
}

/**
 * Runs a command, returns its stdout. A failure is a one-line UserError: the command and the tail of its stderr
 * (these are tools driven with arguments we build; what goes wrong is the environment: a registry down, a
 * package not found, a disk full).
 */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    if (child.stdin) {
      // A command that exits without reading all of it fails the write (EPIPE): its exit code tells what happened.
      child.stdin.on('error', () => {});
      child.stdin.end(opts.input);
    }
    const shown = () => [basename(cmd), ...args].join(' ').slice(0, 300);
    child.on('error', (e) => reject(new UserError(`${shown()}: ${e.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) return resolve(out);
      const tail = err
        .trim()
        .split('\n')
        .filter((l) => l.trim())
        .slice(-3)
        .join(' | ');
      reject(new UserError(`${shown()} failed (${signal ?? `exit ${code}`})${tail ? `: ${tail}` : ''}`));
    });
  });
}

/** One `tar` invocation's worth of a layer: paths under `dir` (default: all its entries), all with one owner. */
export interface TarPart {
  dir: string;
  paths?: string[];
  /** uid and gid (default 0). */
  owner?: number;
  /**
   * GNU tar's --mode for every entry of the part (default 'u=rwX,go=rX': 0755 for directories and executables,
   * 0644 for other files, whatever the umask made of them on disk). Entries that need another mode (/tmp: 1777)
   * go in a part of their own.
   */
  mode?: string;
  /** Only the named entries, not what is under them (directories with another owner or mode). */
  noRecursion?: boolean;
}

const TAR_FLAGS = ['--format=gnu', '--sort=name', '--mtime=@0', '--numeric-owner', '--no-acls', '--no-xattrs'];

/** Writes the parts into one gzipped layer tarball at `out` (the parts in order, each sorted by name). */
export async function writeLayer(parts: TarPart[], out: string): Promise<void> {
  const tarFile = `${out}.tar`;
  let started = false;
  for (const part of parts) {
    const paths = part.paths ?? readdirSync(part.dir).sort();
    if (paths.length === 0) continue;
    const owner = String(part.owner ?? 0);
    await run('tar', [
      started ? '-rf' : '-cf',
      tarFile,
      ...TAR_FLAGS,
      `--owner=${owner}`,
      `--group=${owner}`,
      `--mode=${part.mode ?? 'u=rwX,go=rX'}`,
      ...(part.noRecursion ? ['--no-recursion'] : []),
      '-C',
      part.dir,
      '--',
      ...paths,
    ]);
    started = true;
  }
  if (!started) throw new Error(`layer ${out}: nothing to put in it`);
  // Pre-compressed, so crane pushes these bytes as they are (it would gzip an uncompressed tarball at
  // BestSpeed: tarball.LayerFromOpener in https://github.com/google/go-containerregistry/blob/v0.22.1/pkg/v1/tarball/layer.go).
  // zlib's header has no name and a zero mtime, so the same tar gives the same blob.
  await pipeline(createReadStream(tarFile), createGzip({ level: 6 }), createWriteStream(out));
  rmSync(tarFile);
}

/** The OCI architecture of this machine (the layers hold its binaries). */
export function ociArchitecture(arch: string = process.arch): string {
  const map: Record<string, string> = { x64: 'amd64', arm64: 'arm64', ppc64: 'ppc64le', s390x: 's390x' };
  const a = map[arch];
  if (!a) throw new UserError(`no OCI architecture for ${arch}`);
  return a;
}

/** Whether crane should talk plain HTTP: only to a registry on this machine (the local cluster's). */
export function isLocalRegistry(registry: string): boolean {
  const host = registry.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** Fails fast (before a build of minutes) when nothing answers at REGISTRY/v2/; any HTTP status will do. */
export async function checkRegistry(registry: string): Promise<void> {
  craneBinary();
  const url = `${isLocalRegistry(registry) ? 'http' : 'https'}://${registry}/v2/`;
  // node:http rather than fetch, which refuses some ports a registry may use (the spec's "bad ports").
  const get = url.startsWith('https:') ? httpsGet : httpGet;
  await new Promise<void>((resolve, reject) => {
    const req = get(url, { timeout: 10_000 }, (res) => {
      res.resume();
      resolve();
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 10s')));
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(new UserError(`registry ${registry} does not answer at ${url}: ${err.code ?? err.message}`)),
    );
  });
}

interface Manifest {
  config: { digest: string; size: number };
  layers: { digest: string; size: number }[];
}

export interface BuildOptions {
  /** REGISTRY/NAME:TAG */
  ref: string;
  /** Gzipped layer tarballs (writeLayer), base first. */
  layers: string[];
  config: ImageConfig;
  /** One line each, for `crane config` readers (docker history): what made the layer. */
  history?: string[];
}

/**
 * Pushes an image made of `layers` on an empty base, then replaces its config with ours: architecture, os and
 * the run config. `crane edit config` takes the config as JSON on stdin; `crane mutate` would do the run config
 * from flags, but its list flags are split on commas (pflag's StringSlice), which an argument may contain.
 */
export async function buildAndPush(opts: BuildOptions): Promise<PushedImage> {
  for (const l of opts.layers) if (!existsSync(l)) throw new UserError(`layer ${l} does not exist`);
  const crane = craneBinary();
  const registry = opts.ref.split('/')[0]!;
  const global = isLocalRegistry(registry) ? ['--insecure'] : [];
  const layerArgs = opts.layers.flatMap((l) => ['-f', l]);
  await run(crane, ['append', ...global, '--oci-empty-base', ...layerArgs, '-t', opts.ref]);

  const base = JSON.parse(await run(crane, ['config', ...global, opts.ref])) as Record<string, unknown>;
  const config = {
    ...base,
    created: '1970-01-01T00:00:00Z',
    architecture: ociArchitecture(),
    os: 'linux',
    config: runConfig(opts.config),
    history: opts.layers.map((l, i) => ({
      created: '1970-01-01T00:00:00Z',
      created_by: opts.history?.[i] ?? `hack/image: ${basename(l)}`,
    })),
  };
  await run(crane, ['edit', 'config', ...global, opts.ref, '-t', opts.ref], { input: JSON.stringify(config) });

  const manifest = JSON.parse(await run(crane, ['manifest', ...global, opts.ref])) as Manifest;
  const digest = (await run(crane, ['digest', ...global, opts.ref])).trim();
  const layers = manifest.layers.map(({ digest, size }) => ({ digest, size }));
  const compressedBytes = manifest.config.size + layers.reduce((s, l) => s + l.size, 0);
  return { ref: opts.ref, digest, compressedBytes, layers };
}

/** Tags the image `ref` (REGISTRY/NAME:TAG) also as NAME:`tag` in its registry; returns the new reference. */
export async function tagImage(ref: string, tag: string): Promise<string> {
  const global = isLocalRegistry(ref.split('/')[0]!) ? ['--insecure'] : [];
  await run(craneBinary(), ['tag', ...global, ref, tag]);
  return `${ref.replace(/:[^:/]+$/, '')}:${tag}`;
}

/** The image config's `config` object from ours (field names as the spec writes them). */
export function runConfig(c: ImageConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (c.user !== undefined) out.User = c.user;
  if (c.exposedPorts?.length) out.ExposedPorts = Object.fromEntries(c.exposedPorts.map((p) => [p, {}]));
  if (c.env?.length) out.Env = c.env;
  if (c.entrypoint) out.Entrypoint = c.entrypoint;
  if (c.cmd) out.Cmd = c.cmd;
  if (c.workdir !== undefined) out.WorkingDir = c.workdir;
  if (c.labels && Object.keys(c.labels).length > 0) out.Labels = c.labels;
  return out;
}

/** Bytes as MiB with one decimal, for reports. */
export const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** The size of a file, for reports. */
export const fileSize = (path: string) => statSync(path).size;
