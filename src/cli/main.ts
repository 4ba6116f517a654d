// bin/advanced-daemonset: dispatches to the subcommands. Each subcommand module owns its flags
// and help; this file only lists them, so adding one is one import and one array entry.
import { UserError, type Command } from './command.ts';
import { clusterCommand } from '../../e2e/cluster/command.ts';
import { demoCommand } from '../../e2e/demo/command.ts';
import { controllerCommand, managerCommand } from '../../controller/command.ts';
import { webhookCommand } from '../../webhook/command.ts';
import { certsCommand } from '../../certs/command.ts';

const commands: Command[] = [
  managerCommand,
  controllerCommand,
  webhookCommand,
  certsCommand,
  demoCommand,
  clusterCommand,
];

const topUsage = () =>
  [
    'Usage: advanced-daemonset <command> [flags]',
    '',
    'OpenKruise Advanced DaemonSet (apps.kruise.io/v1alpha1) webhook and controller.',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`),
    '',
    'Run `advanced-daemonset <command> --help` for the flags of a command.',
  ].join('\n');

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(topUsage());
    return name ? 0 : 2;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) throw new UserError(`unknown command "${name}"\n\n${topUsage()}`, 2);
  return command.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UserError) {
      console.error(`error: ${err.message}`);
      process.exitCode = err.exitCode;
    } else {
      // An unexpected failure is a bug: keep the stack for the report, but say so plainly.
      console.error('error: unexpected failure (this is a bug, please report it):');
      console.error(err);
      process.exitCode = 70;
    }
  },
);
