// Where a module is: whether it is the script node was started with, and the scripts beside it.
//
// Whether a module is the script node was started with. Compared as real paths: started through a symlink (a
// checkout linked into another directory, as e2e/docs/readme.e2e.ts runs the README), argv[1] names the link while
// import.meta.url names its target.
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function isMainModule(importMetaUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(importMetaUrl));
  } catch {
    return false;
  }
}

/**
 * A script run in a thread or process of its own, beside the module at `importMetaUrl`: `source` when that module
 * runs from source (tsx, which threads and child processes inherit through execArgv), `bundled` when it is part of
 * a bundle (hack/bundle.ts, COMPANION_SCRIPTS, builds the script there).
 */
export function besideModule(importMetaUrl: string, source: string, bundled: string): string {
  const here = fileURLToPath(importMetaUrl);
  return join(dirname(here), here.endsWith('.ts') ? source : bundled);
}
