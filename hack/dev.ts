// The development entrypoint: the product's commands plus `cluster` (a local real control plane) and `demo`,
// which only make sense in a repository checkout. bin/advanced-daemonset runs it for those two (and for the
// top-level help); the image bundle (hack/bundle.ts) starts from cmd/advanced-daemonset/main.ts and never
// reaches this file (test/imports.test.ts checks it).
import { runMain } from '../src/cli/command.ts';
import { productCommands } from '../cmd/advanced-daemonset/commands.ts';
import { clusterCommand } from '../e2e/cluster/command.ts';
import { demoCommand } from '../e2e/demo/command.ts';

void runMain([...productCommands, demoCommand, clusterCommand], process.argv.slice(2));
