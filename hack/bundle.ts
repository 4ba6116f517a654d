// The production build: the product's entrypoint (cmd/advanced-daemonset/main.ts: src/, controller/, webhook/,
// certs/) bundled by esbuild into one ESM file, npm packages left as imports. The image runs it (Dockerfile), and
// so does the benchmark, so that what is measured is what ships: no tsx at run time, whose transpiling costs
// memory and start-up CPU. The development commands (hack/dev.ts: cluster, demo) are not in it; test/imports.test.ts
// checks that the entry reaches nothing under e2e/ or bench/.
//
//   npm run build        -> dist/main.mjs (+ source map), and dist/launch.mjs, the image's entrypoint: it adds
//                           --max-old-space-size from the container's memory limit and becomes main.mjs
//                           (cmd/advanced-daemonset/launch.ts)
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The product's entrypoint and the image's launcher, as the bundle starts from them. */
export const PRODUCT_ENTRY = 'cmd/advanced-daemonset/main.ts';
export const LAUNCHER_ENTRY = 'cmd/advanced-daemonset/launch.ts';

/**
 * Node flags the bundle runs with (the Dockerfile's ENTRYPOINT has the same). A 16 MiB semi-space caps V8's young
 * generation, which otherwise grows to 128 MiB under a stream of watch events on a machine with memory to spare;
 * the live data sits in the old generation anyway. Measured at 1,000 nodes and pods: peak RSS 200 MiB instead of
 * 287 MiB, no slower. The old generation's limit is not here: dist/launch.mjs sets it from the container's memory
 * limit (src/cli/heap.ts), since a fixed number would fit one limit only.
 */
export const NODE_RUNTIME_FLAGS = ['--enable-source-maps', '--max-semi-space-size=16'];

/**
 * The admission worker's entry (webhook/pool.ts runs it in threads of their own): a bundle that includes the pool
 * gets it beside itself as admission-worker.mjs, where the pool looks for it.
 */
export const ADMISSION_WORKER_ENTRY = 'webhook/admission-worker.ts';

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
      packages: 'external',
      sourcemap: true,
      logLevel: 'warning',
      metafile: true,
      absWorkingDir: repoRoot,
    });
  const result = await esbuild(entry, outfile);
  if ('webhook/pool.ts' in result.metafile.inputs)
    await esbuild(ADMISSION_WORKER_ENTRY, join(dirname(outfile), 'admission-worker.mjs'));
  return result.metafile;
}

// Run as a script (not when this module is imported, or bundled into something else).
if (import.meta.url.endsWith('/hack/bundle.ts') && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outfile = join(repoRoot, 'dist', 'main.mjs');
  const { inputs } = await bundle(PRODUCT_ENTRY, outfile);
  // What the image must never carry: the development cluster, the demo, the benchmarks.
  const dev = Object.keys(inputs).filter((f) => /^(e2e|bench|hack|test)\//.test(f));
  if (dev.length > 0) throw new Error(`the product bundle includes development code: ${dev.join(', ')}`);
  const launcher = join(repoRoot, 'dist', 'launch.mjs');
  await bundle(LAUNCHER_ENTRY, launcher);
  process.stdout.write(`built ${outfile} and ${launcher}\n`);
}
