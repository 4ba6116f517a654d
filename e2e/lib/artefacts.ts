// Files a test keeps for a person to look at after the run (screenshots): in $ADS_E2E_ARTEFACTS, which e2e/run.ts
// sets to a directory of its own for the run and names at the end (it is kept whether the run passes or fails),
// else in <tmp>/ads-e2e-artefacts when a test file runs without e2e/run.ts.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function artefactsDir(): string {
  const dir = process.env.ADS_E2E_ARTEFACTS || join(tmpdir(), 'ads-e2e-artefacts');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Where to write the artefact `name` (the directory exists). */
export function artefactPath(name: string): string {
  return join(artefactsDir(), name);
}
