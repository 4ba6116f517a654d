// dist/launch.mjs, the image's entrypoint: sizes V8's heap from the container's memory limit (src/cli/heap.ts), then
// becomes `node <flags> --max-old-space-size=N dist/main.mjs <args>` through execve (same pid, so still PID 1
// and the receiver of SIGTERM; no second process). Without a limit it loads main.mjs in this process.
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { heapFlags, readMemoryLimit } from '../../src/cli/heap.ts';

const main = join(dirname(fileURLToPath(import.meta.url)), 'main.mjs');
const flags = heapFlags(process.execArgv, process.env.NODE_OPTIONS, readMemoryLimit());
// process.execve is in Node 24 on Linux and macOS (not Windows, where no cgroup limit is found anyway).
if (flags.length > 0 && process.execve) {
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...flags, main, ...process.argv.slice(2)]);
} else {
  await import(pathToFileURL(main).href);
}
