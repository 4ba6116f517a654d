// An image as a plan: layers as lists of entries by their path in the image (pure data, so tests can read what
// an image holds without building it), and the staging that turns a layer's entries into files on disk and
// GNU tar parts (hack/image/oci.ts writeLayer).
import {
  cpSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { run, type TarPart } from './oci.ts';

/** A Debian package, and the paths of it the image keeps (prefixes of its paths, as dpkg-deb -c lists them). */
export interface Deb {
  name: string;
  keep: string[];
}

/**
 * What a layer holds at `path`. Owner root and modes 0755 (directories and executables) or 0644 unless `mode` or
 * `owner` say otherwise; such entries go in a tar part of their own.
 */
export type Entry =
  | { kind: 'dir'; path: string; mode?: number; owner?: number }
  | { kind: 'file'; path: string; text: string; mode?: number; owner?: number }
  | { kind: 'symlink'; path: string; target: string }
  /** A file or a directory tree made at build time, by the source the builder names `source`. */
  | { kind: 'copy'; path: string; source: string }
  /**
   * Debian packages, unpacked at / with merged /usr (their /lib, /lib64, /bin and /sbin under /usr, as Debian 12
   * installs them), only the `keep` paths plus each package's copyright, and a dpkg status file per package in
   * /var/lib/dpkg/status.d/ (as distroless writes them, so image scanners find the versions).
   */
  | { kind: 'debs'; path: '/'; packages: Deb[] }
  /** The CA bundle update-ca-certificates would write: every certificate of the ca-certificates package. */
  | { kind: 'caBundle'; path: string };

export interface LayerPlan {
  name: string;
  /** One line: what made the layer (the image's history). */
  description: string;
  entries: Entry[];
}

/** Every path a layer plan puts in the image (debs as '/'). */
export const planPaths = (layers: LayerPlan[]): string[] => layers.flatMap((l) => l.entries.map((e) => e.path));

const USRMERGE: [string, string][] = [
  ['lib/', 'usr/lib/'],
  ['lib64/', 'usr/lib64/'],
  ['bin/', 'usr/bin/'],
  ['sbin/', 'usr/sbin/'],
];

/** A package path (relative, no leading ./) as merged /usr has it. */
export function usrMerged(path: string): string {
  for (const [from, to] of USRMERGE) if (path.startsWith(from)) return to + path.slice(from.length);
  return path;
}

/** Whether the image keeps a package's path. */
export function kept(deb: Deb, path: string): boolean {
  if (path === `usr/share/doc/${deb.name}/copyright`) return true;
  return deb.keep.some((k) => (k.endsWith('/') ? path.startsWith(k) : path === k));
}

const rel = (path: string) => path.replace(/^\/+/, '');

/** Files and symlinks under `root`, relative, sorted. */
function walk(root: string, dir = root): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      return lstatSync(p).isDirectory() ? walk(root, p) : [relative(root, p)];
    });
}

export interface StageContext {
  /** An empty directory to stage in. */
  dir: string;
  /** Host paths of the `copy` entries' sources. */
  sources: Record<string, string>;
  progress: (line: string) => void;
}

/**
 * Puts a layer's entries on disk under ctx.dir and returns the tar parts that make the layer: the tree with
 * default owner and modes first, then one part per (owner, mode) of the entries that need another.
 */
export async function stageLayer(layer: LayerPlan, ctx: StageContext): Promise<TarPart[]> {
  const main = join(ctx.dir, 'main');
  mkdirSync(main, { recursive: true });
  const special = new Map<string, TarPart & { paths: string[] }>();
  const debRoot = join(ctx.dir, 'debs');
  for (const e of layer.entries) {
    // The tree the entry goes in: the main one, or the part of its owner and mode.
    let into = main;
    if ((e.kind === 'dir' || e.kind === 'file') && (e.mode !== undefined || e.owner)) {
      const mode = (e.mode ?? (e.kind === 'dir' ? 0o755 : 0o644)).toString(8);
      const key = `${e.owner ?? 0}-${mode}`;
      const part = special.get(key) ?? {
        dir: join(ctx.dir, `part-${key}`),
        paths: [],
        owner: e.owner ?? 0,
        mode,
        noRecursion: true,
      };
      special.set(key, part);
      part.paths.push(rel(e.path));
      into = part.dir;
    }
    const target = join(into, rel(e.path));
    switch (e.kind) {
      case 'dir':
        mkdirSync(target, { recursive: true });
        break;
      case 'file':
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, e.text);
        break;
      case 'symlink':
        mkdirSync(dirname(target), { recursive: true });
        symlinkSync(e.target, target);
        break;
      case 'copy': {
        const from = ctx.sources[e.source];
        if (!from) throw new Error(`layer ${layer.name}: no source "${e.source}" for ${e.path}`);
        mkdirSync(dirname(target), { recursive: true });
        cpSync(from, target, { recursive: true, verbatimSymlinks: true });
        break;
      }
      case 'debs':
        await stageDebs(e.packages, debRoot, main, ctx.progress);
        break;
      case 'caBundle': {
        const certs = join(debRoot, 'ca-certificates', 'usr', 'share', 'ca-certificates');
        const pems = walk(certs).filter((f) => f.endsWith('.crt'));
        if (pems.length === 0)
          throw new Error(`layer ${layer.name}: ${e.path} needs the ca-certificates package first`);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, pems.map((f) => readFileSync(join(certs, f), 'utf8').trimEnd() + '\n').join(''));
        break;
      }
    }
  }
  return [{ dir: main }, ...[...special.values()].sort((a, b) => a.dir.localeCompare(b.dir))];
}

/** apt-get download + dpkg-deb -x; copies what each package keeps into `into` (merged /usr). */
async function stageDebs(packages: Deb[], debRoot: string, into: string, progress: (l: string) => void) {
  const downloads = join(debRoot, 'downloads');
  mkdirSync(downloads, { recursive: true });
  progress(`apt-get download ${packages.map((p) => p.name).join(' ')}`);
  // As root, apt downloads as the _apt user, which cannot write into our private temp dir: it warns and
  // downloads as root. Ask for that directly.
  const sandbox = process.getuid?.() === 0 ? ['-o', 'APT::Sandbox::User=root'] : [];
  await run('apt-get', [...sandbox, '-q', 'download', ...packages.map((p) => p.name)], { cwd: downloads });
  const debs = readdirSync(downloads);
  for (const p of packages) {
    const deb = debs.find((f) => f.startsWith(`${p.name}_`) && f.endsWith('.deb'));
    if (!deb) throw new Error(`apt-get download ${p.name} left no ${p.name}_*.deb`);
    const x = join(debRoot, p.name);
    await run('dpkg-deb', ['-x', join(downloads, deb), x]);
    for (const f of walk(x)) {
      if (!kept(p, f)) continue;
      const dest = join(into, usrMerged(f));
      mkdirSync(dirname(dest), { recursive: true });
      const st = lstatSync(join(x, f));
      if (st.isSymbolicLink()) symlinkSync(readlinkSync(join(x, f)), dest);
      else cpSync(join(x, f), dest);
    }
    const status = join(into, 'var', 'lib', 'dpkg', 'status.d', p.name);
    mkdirSync(dirname(status), { recursive: true });
    writeFileSync(status, await run('dpkg-deb', ['-f', join(downloads, deb)]));
  }
}
