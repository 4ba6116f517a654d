// `kubectl ads <command>`: the command table (names, flags, help, what their arguments complete to), the dispatch,
// and the one place errors become messages and exit codes. cmd/kubectl-ads/main.ts only calls runCli.
import pkg from '../package.json' with { type: 'json' };
import {
  GLOBAL_FLAGS,
  boolFlag,
  flagsHelp,
  intFlag,
  parseArgv,
  parseArgvLenient,
  stringFlag,
  UsageError,
  type FlagSpec,
} from './args.ts';
import {
  bashCompletion,
  completionOutput,
  Directive,
  planCompletion,
  zshCompletion,
  type ArgKind,
  type CompletableCommand,
} from './completion.ts';
import {
  completionNames,
  runCanary,
  runMigrate,
  runGet,
  runHistory,
  runPartition,
  runPause,
  runFreeze,
  runPods,
  runRestart,
  runStatus,
  runUndo,
  type Context,
  type Io,
} from './commands.ts';
import { CANARY_ACTIONS } from './daemonset.ts';
import { explainError } from './errors.ts';
import { connect, type ClusterConnection } from './connect.ts';
import { OUTPUT_FORMATS } from './printers.ts';
import { homedir } from 'node:os';
import { kubeconfigPrecedence, mergeKubeconfigs, readKubeconfigs } from '../src/k8s/kubeconfig.ts';

export const VERSION = pkg.version;
const PROGRAM = 'kubectl ads';

interface CommandDef extends CompletableCommand {
  /** The usage line(s) and text after the summary in --help. */
  usage: string;
  run(ctx: Context): Promise<number>;
}

const output = (values: readonly string[]): FlagSpec => ({
  name: 'output',
  short: 'o',
  kind: 'string',
  arg: 'FORMAT',
  help: `Output format: ${values.join('|')}`,
  values,
});
const allNamespaces: FlagSpec = {
  name: 'all-namespaces',
  short: 'A',
  kind: 'bool',
  help: 'List across all namespaces',
};
const DS: ArgKind[] = ['daemonset'];

const COMMANDS: CommandDef[] = [
  {
    name: 'get',
    summary: 'List Advanced DaemonSets with their rollout state',
    usage: `${PROGRAM} get [NAME] [-o json|yaml|wide|name] [-A]

Columns: DESIRED/UPDATED/READY/AVAILABLE nodes, REVISION (the update revision's hash: status.daemonSetHash),
STRATEGY (rolling update type, partition, rollingUpdate.selector, paused), CANARY (status.canary.phase, "-" without a
canary), AGE. -o wide adds CURRENT, CONTAINERS, IMAGES and SELECTOR.`,
    flags: [output(OUTPUT_FORMATS), allNamespaces],
    args: DS,
    run: runGet,
  },
  {
    name: 'status',
    summary: 'Wait for a rollout to finish, like kubectl rollout status',
    usage: `${PROGRAM} status NAME [--watch=true|false] [--timeout D]

Exit status: 0 when the rollout is complete, 1 when it failed (Progressing=False ProgressDeadlineExceeded, or a
failed canary), 2 when --timeout passed first. A rollout held by a partition or rollingUpdate.selector is complete
once every node they let the controller update runs an updated, available pod ("partitioned roll out complete").
A paused rollout is not complete. On a terminal the state is redrawn live with a progress bar and a node x revision
map; otherwise each new state is printed as a line.`,
    flags: [
      { name: 'watch', short: 'w', kind: 'bool', help: 'Watch until the rollout ends (default true)' },
      { name: 'timeout', kind: 'string', arg: 'D', help: 'Stop waiting after D (e.g. 90s, 5m; 0: never)' },
    ],
    args: DS,
    run: runStatus,
  },
  {
    name: 'pause',
    summary: 'Pause the rolling update (rollingUpdate.paused)',
    usage: `${PROGRAM} pause NAME`,
    flags: [],
    args: DS,
    run: runPause(true),
  },
  {
    name: 'resume',
    summary: 'Resume a paused rolling update',
    usage: `${PROGRAM} resume NAME`,
    flags: [],
    args: DS,
    run: runPause(false),
  },
  {
    name: 'freeze',
    summary: 'Freeze the rollout: no pod created, deleted or updated, new nodes included',
    usage: `${PROGRAM} freeze NAME

Sets the annotation advanced-daemonset.io/rollout-frozen=true, as ExtendedDaemonSet's rollout-frozen: nothing is
created or deleted (new nodes get no pod, failed pods stay) until unfreeze. pause, by contrast, stops updates only.`,
    flags: [],
    args: DS,
    run: runFreeze(true),
  },
  {
    name: 'unfreeze',
    summary: 'Remove the freeze; what waited (new nodes, failed pods, the rollout) goes on',
    usage: `${PROGRAM} unfreeze NAME`,
    flags: [],
    args: DS,
    run: runFreeze(false),
  },
  {
    name: 'partition',
    summary: 'Set the partition (nodes kept on the old revision), or lower it by a step',
    usage: `${PROGRAM} partition NAME N|N%
${PROGRAM} partition NAME --step K

N is a node count, N% a percentage of status.desiredNumberScheduled (rounded down, as the controller does).
--step K lowers the partition in effect by K nodes, never below 0: a percentage is first resolved against
status.desiredNumberScheduled and the result is written as a count; a partition above desiredNumberScheduled
steps from desiredNumberScheduled.`,
    flags: [{ name: 'step', kind: 'string', arg: 'K', help: 'Lower the partition by K nodes' }],
    args: DS,
    run: runPartition,
  },
  {
    name: 'restart',
    summary: 'Restart every pod (kubectl.kubernetes.io/restartedAt on the template)',
    usage: `${PROGRAM} restart NAME`,
    flags: [],
    args: DS,
    run: runRestart,
  },
  {
    name: 'undo',
    summary: 'Roll back to the previous (or a given) revision',
    usage: `${PROGRAM} undo NAME [--to-revision N]`,
    flags: [
      { name: 'to-revision', kind: 'string', arg: 'N', help: 'The revision to roll back to (default: previous)' },
    ],
    args: DS,
    run: runUndo,
  },
  {
    name: 'history',
    summary: 'Show the revisions (ControllerRevisions), one revision, or a diff of two',
    usage: `${PROGRAM} history NAME
${PROGRAM} history NAME --revision N [-o yaml|json]
${PROGRAM} history NAME [--revision N] --diff M

--diff M shows the pod template changes from revision M to revision N (to the current template without
--revision), as a unified diff of the defaulted templates.`,
    flags: [
      { name: 'revision', kind: 'string', arg: 'N', help: 'Show the pod template of revision N' },
      { name: 'diff', kind: 'string', arg: 'M', help: 'Diff from revision M' },
      output(['json', 'yaml']),
    ],
    args: DS,
    run: runHistory,
  },
  {
    name: 'pods',
    summary: "List the DaemonSet's pods by node: revision, lifecycle state, in-place update",
    usage: `${PROGRAM} pods NAME [-o json|yaml|name]`,
    flags: [output(['json', 'yaml', 'name'])],
    args: DS,
    run: runPods,
  },
  {
    name: 'canary',
    summary: 'Promote, pause, resume or fail the canary',
    usage: `${PROGRAM} canary promote|pause|resume|fail NAME

Steers the canary of rollingUpdate.canary through its annotations: promote sets
advanced-daemonset.io/canary-validated=<canary revision>, pause canary-paused=true, resume
canary-resumed=<canary revision> (and removes canary-paused; also resumes a canary autoPause paused, and turns
autoPause off until that canary ends), fail canary-failed=<canary revision>.`,
    flags: [],
    args: [{ words: CANARY_ACTIONS }, 'daemonset'],
    run: runCanary,
  },
  {
    name: 'migrate',
    summary: 'Turn an apps/v1 DaemonSet into an Advanced DaemonSet, keeping every pod',
    usage: `${PROGRAM} migrate NAME [--dry-run] [--api-version apps.kruise.io/v1alpha1|apps.kruise.io/v1beta1] [--timeout D]

Takes over the apps/v1 DaemonSet NAME with no pod restarted: deletes it with propagationPolicy Orphan (its pods
and ControllerRevisions stay), creates the Advanced DaemonSet NAME with the same selector, template and rolling
update budget, and waits until the controller has adopted every pod (same uid, same controller-revision-hash).
Refused, with the reason, when a pod would not be kept: a rollout still running, or a template the controller
would hash anew. Applying the changed manifest beside the running DaemonSet instead runs two pods on every node.
--dry-run prints the manifest and the steps, and what would be refused.`,
    flags: [
      { name: 'dry-run', kind: 'bool', help: 'Print the manifest and the steps; change nothing' },
      {
        name: 'api-version',
        kind: 'string',
        arg: 'V',
        help: 'apiVersion of the new object (default apps.kruise.io/v1alpha1)',
      },
      { name: 'timeout', kind: 'string', arg: 'D', help: 'How long to wait for the adoption (default 5m)' },
    ],
    args: [{ words: [] }],
    run: runMigrate,
  },
  {
    name: 'dashboard',
    summary: 'Serve a live web page of the rollouts, with their actions, on 127.0.0.1',
    usage: `${PROGRAM} dashboard [--port N] [-A] [--read-only]

The page's buttons (pause, resume, partition, canary promote/pause/resume/fail, undo) run the same commands
as the CLI, with your kubeconfig's rights, each after a confirmation in the page; --read-only leaves them out.`,
    flags: [
      { name: 'port', kind: 'string', arg: 'N', help: 'Local port (default 8765; 0 picks a free one)' },
      allNamespaces,
      { name: 'read-only', kind: 'bool', help: 'Show the rollouts only: no actions' },
    ],
    run: runDashboardCommand,
  },
  {
    name: 'completion',
    summary: 'Print the shell completion script (bash or zsh)',
    usage: `${PROGRAM} completion bash|zsh

  source <(kubectl-ads completion bash)     # kubectl-ads ...
As "kubectl ads ...", kubectl (1.26 and later) completes through the kubectl_complete-ads executable shipped
beside kubectl-ads: keep both on PATH.`,
    flags: [],
    args: [
      {
        words: [
          { word: 'bash', help: 'bash completion' },
          { word: 'zsh', help: 'zsh completion' },
        ],
      },
    ],
    run: async (ctx) => {
      const shell = ctx.args.positionals[1];
      if (shell === 'bash') ctx.io.out(bashCompletion());
      else if (shell === 'zsh') ctx.io.out(zshCompletion());
      else throw new UsageError(`completion needs a shell: bash or zsh${shell ? `, got "${shell}"` : ''}`);
      return 0;
    },
  },
  {
    name: 'version',
    summary: 'Print the version',
    usage: `${PROGRAM} version`,
    flags: [],
    run: async (ctx) => {
      ctx.io.out(`kubectl-ads ${VERSION}\n`);
      return 0;
    },
  },
  {
    name: 'help',
    summary: 'Help about a command',
    usage: `${PROGRAM} help [COMMAND]`,
    flags: [],
    run: async (ctx) => {
      const about = COMMANDS.find((c) => c.name === ctx.args.positionals[1]);
      ctx.io.out(`${about ? commandHelp(about) : topHelp()}\n`);
      return 0;
    },
  },
];

async function runDashboardCommand(ctx: Context): Promise<number> {
  const portRaw = intFlag(ctx.args, 'port');
  // Loaded only here: the web server is not needed by any other command.
  const { runDashboard } = await import('./dashboard/server.ts');
  const { closed } = await runDashboard({
    kubeconfig: stringFlag(ctx.args, 'kubeconfig'),
    context: stringFlag(ctx.args, 'context'),
    namespace: stringFlag(ctx.args, 'namespace'),
    allNamespaces: boolFlag(ctx.args, 'all-namespaces'),
    readOnly: boolFlag(ctx.args, 'read-only'),
    ...(portRaw !== undefined ? { port: portRaw } : {}),
    signal: ctx.io.signal,
    log: (l) => ctx.io.err(`${l}\n`),
  });
  await closed;
  return 0;
}

export const commands: readonly CompletableCommand[] = COMMANDS;

function topHelp(): string {
  const visible = COMMANDS.filter((c) => !c.hidden);
  const w = Math.max(...visible.map((c) => c.name.length)) + 3;
  return [
    'Operate OpenKruise Advanced DaemonSets (apps.kruise.io): rollouts, partitions, history, pods, canaries.',
    '',
    'Usage:',
    `  ${PROGRAM} <command> [NAME] [flags]`,
    '',
    'Commands:',
    ...visible.map((c) => `  ${c.name.padEnd(w)}${c.summary}`),
    '',
    'Flags of every command:',
    flagsHelp(GLOBAL_FLAGS),
    '',
    `Use "${PROGRAM} <command> --help" for more about a command.`,
  ].join('\n');
}

function commandHelp(c: CommandDef): string {
  return [
    c.summary,
    '',
    'Usage:',
    ...c.usage.split('\n').map((l) => (l.startsWith(PROGRAM) ? `  ${l}` : l)),
    '',
    ...(c.flags.length ? ['Flags:', flagsHelp(c.flags), ''] : []),
    'Flags of every command:',
    flagsHelp(GLOBAL_FLAGS),
  ].join('\n');
}

/** Every flag of every command, to find the command word behind flags given first (`-n ns get`). */
const ALL_FLAGS: FlagSpec[] = [...GLOBAL_FLAGS, ...COMMANDS.flatMap((c) => c.flags)];

function connectFrom(args: { flags: Record<string, string | boolean> }): ClusterConnection {
  const s = (n: string) => (typeof args.flags[n] === 'string' ? (args.flags[n] as string) : undefined);
  return connect({
    kubeconfig: s('kubeconfig'),
    context: s('context'),
    namespace: s('namespace'),
    userAgent: `kubectl-ads/${VERSION}`,
  });
}

/** Context names for `--context <TAB>`: the merged kubeconfig's, as kubectl would read them. */
function contextNames(kubeconfig: string | undefined): string[] {
  try {
    const { paths, explicit } = kubeconfigPrecedence({
      explicit: kubeconfig,
      env: process.env.KUBECONFIG,
      home: homedir(),
    });
    return [...mergeKubeconfigs(readKubeconfigs(paths, explicit)).contexts.keys()];
  } catch {
    return [];
  }
}

/** `__complete <args...> <toComplete>` (also what kubectl_complete-ads runs). */
async function complete(argv: string[], io: Io): Promise<number> {
  const toComplete = argv.length > 0 ? (argv[argv.length - 1] as string) : '';
  const plan = planCompletion(COMMANDS, argv.slice(0, -1), toComplete);
  let candidates = plan.candidates;
  if (plan.fetch === 'contexts') candidates = contextNames(plan.flags.kubeconfig as string | undefined);
  else if (plan.fetch) {
    let conn: ClusterConnection | undefined;
    try {
      conn = connectFrom(plan);
    } catch {
      conn = undefined;
    }
    candidates = conn ? await completionNames(conn, plan.fetch) : [];
  }
  if (plan.fetch) candidates = candidates.filter((c) => c.startsWith(plan.prefix));
  io.out(completionOutput(candidates, plan.directive));
  io.err(
    `Completion ended with directive: ${plan.directive === Directive.NoFileComp ? 'ShellCompDirectiveNoFileComp' : plan.directive}\n`,
  );
  return 0;
}

/** Runs `kubectl ads` with `argv` (the arguments after the program name) and returns the exit code. */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  try {
    if (argv[0] === '__complete' || argv[0] === '__completeNoDesc') return await complete(argv.slice(1), io);
    const pre = parseArgvLenient(argv, ALL_FLAGS);
    const name = pre.positionals[0];
    if (!name) {
      io.out(`${topHelp()}\n`);
      return 0;
    }
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}" for "${PROGRAM}"`);
    if (pre.flags.help === true) {
      io.out(`${commandHelp(command)}\n`);
      return 0;
    }
    const args = parseArgv(argv, [...GLOBAL_FLAGS, ...command.flags]);
    let conn: ClusterConnection | undefined;
    const ctx: Context = {
      args,
      io,
      conn: () => (conn ??= connectFrom(args)),
    };
    try {
      return await command.run(ctx);
    } finally {
      conn?.client.close();
    }
  } catch (err) {
    if (err instanceof UsageError) {
      let word: string | undefined;
      try {
        word = parseArgvLenient(argv, ALL_FLAGS).positionals[0];
      } catch {
        word = undefined;
      }
      const cmd = COMMANDS.find((c) => c.name === word);
      io.err(`error: ${err.message}\nSee '${PROGRAM}${cmd ? ` ${cmd.name}` : ''} --help' for usage.\n`);
      return 1;
    }
    const { text, exitCode } = explainError(err);
    io.err(`${text}\n`);
    return exitCode;
  }
}
