// Whether a module is the script node was started with. Compared as real paths: started through a symlink (a
// checkout linked into another directory, as e2e/docs/readme.e2e.ts runs the README), argv[1] names the link while
// import.meta.url names its target.
import { realpathSync } from 'node:fs';
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
