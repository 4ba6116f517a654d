// The product's entrypoint (dist/main.mjs in the image, hack/bundle.ts): `advanced-daemonset manager|controller|
// webhook|certs`. Each command module owns its flags and help; this file only runs them. The split follows
// cert-manager's cmd/<binary>/main.go + app/ (https://github.com/cert-manager/cert-manager/tree/master/cmd/webhook).
import { runMain } from '../../src/cli/command.ts';
import { productCommands } from './commands.ts';

void runMain(productCommands, process.argv.slice(2));
