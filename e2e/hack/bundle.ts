// The production build: our TypeScript (src/, controller/, webhook/, certs/) bundled by esbuild into one ESM
// file, npm packages left as imports. The image runs it (Dockerfile), and so does the benchmark, so that what
// is measured is what ships: no tsx at run time, whose transpiling costs memory and start-up CPU.
//
//   npm run build        -> dist/main.mjs (+ source map, + versions.json for the `cluster` command), and
//                           dist/launch.mjs, the image's entrypoint: it adds --max-old-space-size from the
//                           container's memory limit and becomes main.mjs (src/cli/launch.ts)
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Node flags the bundle runs with (the Dockerfile's ENTRYPOINT has the same). A 16 MiB semi-space caps V8's young
 * generation, which otherwise grows to 128 MiB under a stream of watch events on a machine with memory to spare;
 * the live data sits in the old generation anyway. Measured at 1,000 nodes and pods: peak RSS 200 MiB instead of
 * 287 MiB, no slower. The old generation's limit is not here: dist/launch.mjs sets it from the container's memory
 * limit (src/cli/heap.ts), since a fixed number would fit one limit only.
 */
export const NODE_RUNTIME_FLAGS = ['--enable-source-maps', '--max-semi-space-size=16'];

/** Bundles `entry` (a path under the repository) into `outfile`. */
export async function bundle(entry: string, outfile: string): Promise<void> {
  mkdirSync(dirname(outfile), { recursive: true });
  await build({
    entryPoints: [join(repoRoot, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    packages: 'external',
    sourcemap: true,
    logLevel: 'warning',
  });
  // e2e/cluster/binaries.ts (behind the `cluster` command) reads versions.json beside itself when loaded.
  copyFileSync(join(repoRoot, 'e2e', 'cluster', 'versions.json'), join(dirname(outfile), 'versions.json'));
}

// Run as a script (not when this module is imported, or bundled into something else).
if (import.meta.url.endsWith('/e2e/hack/bundle.ts') && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outfile = join(repoRoot, 'dist', 'main.mjs');
  await bundle('src/cli/main.ts', outfile);
  const launcher = join(repoRoot, 'dist', 'launch.mjs');
  await bundle('src/cli/launch.ts', launcher);
  process.stdout.write(`built ${outfile} and ${launcher}\n`);
}
