// The production build: the product's entrypoint (cmd/advanced-daemonset/main.ts: src/, controller/, webhook/,
// certs/) bundled by esbuild into one ESM file, npm packages left as imports. The image runs it (Dockerfile), and
// so does the benchmark, so that what is measured is what ships: no tsx at run time, whose transpiling costs
// memory and start-up CPU. The development commands (hack/dev.ts: cluster, demo) are not in it; test/imports.test.ts
// checks that the entry reaches nothing under e2e/ or bench/.
//
//   npm run build        -> dist/main.mjs (+ source map), and dist/launch.mjs, the image's entrypoint: it adds
//                           --max-old-space-size from the container's memory limit and becomes main.mjs
//                           (cmd/advanced-daemonset/launch.ts)
//   node --import tsx hack/bundle.ts kubectl-ads [OUTDIR]
//                        -> OUTDIR (default dist/)/kubectl-ads.mjs, the kubectl plugin with every npm package
//                           inside (its npm package declares no dependencies, so `npm install -g` needs no
//                           registry), kubectl_complete-ads.mjs and dashboard-ui/app.js. `npm pack ./cmd/kubectl-ads`
//                           runs it as its prepack (cmd/kubectl-ads/package.json).
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainModule } from '../src/cli/main-module.ts';
import { build, type Metafile, type Plugin } from 'esbuild';
import { UI_DIR, UI_SCRIPT, uiBuildOptions } from '../plugin/dashboard/assets.ts';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The product's entrypoint and the image's launcher, as the bundle starts from them. */
export const PRODUCT_ENTRY = 'cmd/advanced-daemonset/main.ts';
export const LAUNCHER_ENTRY = 'cmd/advanced-daemonset/launch.ts';

/**
 * Node flags the bundle runs with (the Dockerfile's ENTRYPOINT has the same). A 4 MiB semi-space caps V8's young
 * generation at 8 MiB: it otherwise grows (to 128 MiB by default on a machine with memory to spare, 32 MiB with
 * 16 MiB semi-spaces) under the stream of watch events, whose objects die young, while the live data sits in the
 * old generation anyway. Measured at 1,000 nodes and pods with trimmed caches (bench/README.md, sections 4 and 6):
 * 144 instead of 172-178 MiB RSS for the manager, the same CPU. 2 MiB saved 5-8 MiB more while the manager works,
 * but the webhook's p99 at 1,000 reviews/s went from 1.5 to 4-10 ms (validate; more scavenges, whose helper threads
 * wait for the same core); 1 MiB made planning at 5,000 nodes 2-4x slower. Not set: V8's --memory-saver-mode, which
 * lets the old generation grow to 1.1x what a collection left: 20 MiB less for the manager at 5,000 nodes, but the
 * webhook's p99 at 1,000 reviews/s went from 2.7 to 16.7 ms (bench/README.md, section 8). The old generation's limit
 * is not here: dist/launch.mjs sets it from the container's memory limit (src/cli/heap.ts), since a fixed number
 * would fit one limit only.
 * No --enable-source-maps: with it, the first stack trace decodes the bundle's source map into 63,000 arrays that
 * stay in the heap (about 6 MiB), and the maps of npm packages that ship one are read too: 10 MiB of heap and 5 MiB
 * of RSS for the manager at 1,000 nodes (bench/README.md, section 6). Stack traces name lines of dist/main.mjs,
 * readable code with each source file's path above its part; NODE_OPTIONS=--enable-source-maps maps them back to
 * the TypeScript sources (the map ships beside the bundle).
 * --no-maglev: V8's mid-tier compiler (Maglev, on by default since V8 11.7) compiles warm functions between the
 * baseline code and TurboFan; without it, functions wait in baseline code until TurboFan optimizes them. For a
 * long-running controller whose hot code TurboFan takes anyway, the mid tier buys a faster warm-up and costs memory:
 * Maglev's compiler pages of the Node binary, its compile zones and its code. Without it the manager with 1,000
 * nodes and pods peaked 1-7 MiB lower (3 MiB with the client's other changes), and planning at 5,000 nodes (steady
 * 3.1 ms, with the memo 0.37 ms) and the webhook at 1,000 reviews/s were no slower (bench/README.md, sections 4, 5
 * and 6).
 */
export const NODE_RUNTIME_FLAGS = ['--max-semi-space-size=4', '--no-maglev'];

/**
 * The environment the bundle runs with (the Dockerfile's ENV has the same). glibc's malloc gives each thread that
 * contends for it an arena of its own, up to 8 per core, and memory freed in one is not returned: Node's threads
 * (libuv's pool, V8's compiler and GC workers, the admission threads) each held a few MiB. Two arenas: 5-7 MiB less
 * RSS for the manager with 1,000 nodes and pods cached (bench/README.md, section 6); one arena was no better.
 */
export const NODE_RUNTIME_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/**
 * Scripts that run in a thread or process of their own: a bundle that includes the module that runs one (`runBy`)
 * gets it (`entry`) beside itself as `file`, where that module looks for it (besideModule, src/cli/main-module.ts).
 */
export const COMPANION_SCRIPTS = [
  // The admission worker: webhook/pool.ts runs it in threads of their own.
  { runBy: 'webhook/pool.ts', entry: 'webhook/admission-worker.ts', file: 'admission-worker.mjs' },
  // The certificate issuer: certs/issuer.ts runs it in a child process.
  { runBy: 'certs/issuer.ts', entry: 'certs/issuer-process.ts', file: 'certs-issuer.mjs' },
] as const;

/**
 * The dashboard's page script (`kubectl ads dashboard`, plugin/dashboard/assets.ts): a bundle that includes the
 * dashboard gets it beside itself as dashboard-ui/app.js (preact, htm and the stylesheet inside), where the dashboard
 * looks for it, so the packed plugin needs neither esbuild nor preact at run time.
 */
const DASHBOARD_ASSETS = 'plugin/dashboard/assets.ts';

export async function bundleDashboardUi(outdir: string): Promise<string> {
  const outfile = join(outdir, UI_DIR, UI_SCRIPT);
  await build({ ...uiBuildOptions(), outfile, absWorkingDir: repoRoot });
  return outfile;
}

/** Bundles `entry` (a path under the repository) into `outfile`; returns esbuild's metafile (the inputs). */
export async function bundle(entry: string, outfile: string): Promise<Metafile> {
  mkdirSync(dirname(outfile), { recursive: true });
  const esbuild = (from: string, to: string) =>
    build({
      entryPoints: [join(repoRoot, from)],
      outfile: to,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      plugins: [builtinsThroughRequire, npmPackagesExternal],
      sourcemap: true,
      // Stack traces need the mappings, not the sources: --enable-source-maps keeps the parsed map in the heap.
      sourcesContent: false,
      logLevel: 'warning',
      metafile: true,
      absWorkingDir: repoRoot,
    });
  const result = await esbuild(entry, outfile);
  asciiOnly(outfile);
  for (const { runBy, entry: script, file } of COMPANION_SCRIPTS) {
    if (!(runBy in result.metafile.inputs)) continue;
    const out = join(dirname(outfile), file);
    await esbuild(script, out);
    asciiOnly(out);
  }
  if (DASHBOARD_ASSETS in result.metafile.inputs) await bundleDashboardUi(dirname(outfile));
  return result.metafile;
}

/**
 * npm packages bundled in rather than imported from node_modules at run time, with what the bundle does not use left
 * out. TypeBox's package entry re-exports its whole library (the value, compiler and error modules, about 200 files),
 * of which the product uses the `Type` builders alone: imported, it cost 1.7 MiB of V8 heap; bundled, 0.3 MiB (the
 * manager idle with nothing cached: 20.5 instead of 21.7 MiB of live heap, in a heap snapshot), and as much in each
 * admission thread. The others are CommonJS, which esbuild cannot trim: bundling fastify, pino, prom-client, ajv,
 * yaml and fast-json-patch too left the live heap as it was (20.8 MiB).
 */
const INLINED_PACKAGES = ['@sinclair/typebox'];

/** Every npm package stays an import of node_modules (the image ships it), except INLINED_PACKAGES. */
const npmPackagesExternal: Plugin = {
  name: 'npm-packages-external',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      INLINED_PACKAGES.some((p) => args.path === p || args.path.startsWith(`${p}/`))
        ? undefined
        : { path: args.path, external: true },
    );
  },
};

/**
 * The bundle's imports of Node's built-in modules (`node:http`, `node:fs`, ...) as CommonJS modules of one line,
 * `module.exports = process.getBuiltinModule(name)`, instead of ES imports. An ES import of a built-in makes Node
 * build the module's ES facade, which reads every export once, lazy getters included: `node:http`'s WebSocket,
 * CloseEvent and MessageEvent load Node's bundled undici and the web streams (0.75 MB of source; 1.1 MiB of heap and
 * 1-2 MiB of RSS for the manager), `node:fs`'s `promises` the promise API, for code that uses none of them
 * (`syncExports` in https://github.com/nodejs/node/blob/v24.21.0/lib/internal/bootstrap/realm.js). esbuild reads
 * named imports of a CommonJS module as property reads where they are used, so no getter runs before its export is.
 */
const builtinsThroughRequire: Plugin = {
  name: 'builtins-through-require',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, namespace: 'builtin' }));
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = process.getBuiltinModule(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * V8 keeps a script's source in the heap for as long as its functions live, one byte per character only if every
 * character fits in Latin-1. esbuild escapes non-ASCII characters in strings and regular expressions
 * (charset: ascii) but keeps some comments as written, and one '≤' in a kept comment stored the whole 0.5 MB bundle
 * two bytes per character. Escaping what is left (in comments, where the escape is as readable) keeps it one byte.
 */
function asciiOnly(file: string): void {
  const text = readFileSync(file, 'utf8');
  // eslint-disable-next-line no-control-regex
  const ascii = text.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
  if (ascii !== text) writeFileSync(file, ascii);
}

/**
 * src/k8s/kubeconfig.ts loads client-node with `import('@kubernetes/client-node')` for KubeConfig alone (exec and
 * auth-provider credentials); a dynamic import keeps every export of the package, 16 MB of generated API clients.
 * The plugin's bundle gets a module exporting KubeConfig only.
 */
const clientNodeKubeConfigOnly: Plugin = {
  name: 'client-node-kubeconfig-only',
  setup(b) {
    b.onResolve({ filter: /^@kubernetes\/client-node$/ }, () => ({
      path: 'client-node',
      namespace: 'kubeconfig-only',
    }));
    b.onLoad({ filter: /.*/, namespace: 'kubeconfig-only' }, () => ({
      contents: "export { KubeConfig } from '@kubernetes/client-node/dist/config.js';",
      resolveDir: repoRoot,
      loader: 'js',
    }));
  },
};

/** The kubectl plugin's entrypoint (plugin/), and its npm package's manifest. */
export const KUBECTL_ADS_ENTRY = 'cmd/kubectl-ads/main.ts';
export const KUBECTL_ADS_PACKAGE = 'cmd/kubectl-ads/package.json';

/**
 * The kubectl plugin as its npm package ships it, in `outdir`: kubectl-ads.mjs with every npm package bundled in
 * (client-node too, for exec-credential kubeconfigs), run by plain `node` (no tsx: Node does not strip types under
 * node_modules); kubectl_complete-ads.mjs, the completion entry kubectl looks for; the dashboard's page script.
 * CommonJS packages inside an ESM bundle call require() for Node's built-ins: the banner gives them one.
 */
export async function bundleKubectlAds(outdir: string): Promise<string[]> {
  const rootVersion = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
  const pkgVersion = (JSON.parse(readFileSync(join(repoRoot, KUBECTL_ADS_PACKAGE), 'utf8')) as { version: string })
    .version;
  if (pkgVersion !== rootVersion)
    throw new Error(`${KUBECTL_ADS_PACKAGE} has version ${pkgVersion}, package.json ${rootVersion}: keep them equal`);
  mkdirSync(outdir, { recursive: true });
  const main = join(outdir, 'kubectl-ads.mjs');
  const result = await build({
    entryPoints: [join(repoRoot, KUBECTL_ADS_ENTRY)],
    outfile: main,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    logLevel: 'warning',
    metafile: true,
    legalComments: 'none',
    absWorkingDir: repoRoot,
    // The page script is prebuilt beside the bundle; esbuild is only the dashboard's fallback from the sources.
    external: ['esbuild'],
    plugins: [clientNodeKubeConfigOnly],
    banner: {
      js: [
        '#!/usr/bin/env node',
        "import { createRequire as __adsCreateRequire } from 'node:module';",
        'const require = __adsCreateRequire(import.meta.url);',
      ].join('\n'),
    },
  });
  const dev = Object.keys(result.metafile.inputs).filter((f) => /^(e2e|bench|hack|test)\//.test(f));
  if (dev.length > 0) throw new Error(`the kubectl-ads bundle includes development code: ${dev.join(', ')}`);
  const complete = join(outdir, 'kubectl_complete-ads.mjs');
  writeFileSync(
    complete,
    [
      '#!/usr/bin/env node',
      '// kubectl (1.26 and later) completes `kubectl ads ...` through this executable: kubectl-ads __complete <words>.',
      "process.argv.splice(2, 0, '__complete');",
      "await import('./kubectl-ads.mjs');",
      '',
    ].join('\n'),
  );
  for (const f of [main, complete]) chmodSync(f, 0o755);
  const out = [main, complete];
  if (DASHBOARD_ASSETS in result.metafile.inputs) out.push(await bundleDashboardUi(outdir));
  return out;
}

/**
 * The product as the image runs it, into `outdir`: main.mjs (with the admission worker beside it) and launch.mjs.
 * Refuses a bundle that reaches development code (`npm run build` and `npm run image` both build with this).
 */
export async function bundleProduct(outdir: string): Promise<string[]> {
  const outfile = join(outdir, 'main.mjs');
  const { inputs } = await bundle(PRODUCT_ENTRY, outfile);
  // What the image must never carry: the development cluster, the demo, the benchmarks.
  const dev = Object.keys(inputs).filter((f) => /^(e2e|bench|hack|test)\//.test(f));
  if (dev.length > 0) throw new Error(`the product bundle includes development code: ${dev.join(', ')}`);
  const launcher = join(outdir, 'launch.mjs');
  await bundle(LAUNCHER_ENTRY, launcher);
  return [outfile, launcher];
}

// Run as a script (not when this module is imported, or bundled into something else).
if (import.meta.url.endsWith('/hack/bundle.ts') && isMainModule(import.meta.url) && process.argv[2] === 'kubectl-ads') {
  const built = await bundleKubectlAds(resolve(process.argv[3] ?? join(repoRoot, 'dist')));
  process.stdout.write(`built ${built.join(', ')}\n`);
} else if (import.meta.url.endsWith('/hack/bundle.ts') && isMainModule(import.meta.url)) {
  const built = await bundleProduct(join(repoRoot, 'dist'));
  process.stdout.write(`built ${built.join(' and ')}\n`);
}
