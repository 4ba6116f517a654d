// Where the tools that build images without Docker live: crane and the pause binary, built by
// e2e/hack/build-node.sh into the same cache as the control plane (e2e/cluster/binaries.ts, nodeBinaries).
import { existsSync } from 'node:fs';
import { UserError } from '../../src/cli/command.ts';
import { nodeBinaries } from '../../e2e/cluster/binaries.ts';

const BUILD_SCRIPT = 'e2e/hack/build-node.sh';

export function imageTools() {
  const { crane, pause } = nodeBinaries();
  /** The sandbox image's binary, and its tag (build/pause/Makefile's TAG) in pause.version beside it. */
  return { crane, pause, pauseVersion: `${pause}.version` };
}

/** The path of a built tool, or a UserError that says how to build it. */
export function requireTool(path: string, what: string): string {
  if (!existsSync(path)) throw new UserError(`${what} not found at ${path}: build it with ${BUILD_SCRIPT}`);
  return path;
}

export function craneBinary(): string {
  return requireTool(imageTools().crane, 'crane');
}
