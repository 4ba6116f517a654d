import { parseArgs, type ParseArgsConfig } from 'node:util';

/** One `bin/advanced-daemonset` subcommand. Each lives beside the code it drives. */
export interface Command {
  name: string;
  /** One line for the top-level help. */
  summary: string;
  /** Full help text printed by `--help`. */
  usage: string;
  /** Returns the process exit code. */
  run(argv: string[]): Promise<number>;
}

/** An error whose message is meant for the user as is: printed without a stack trace. */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * parseArgs with the conventions every subcommand shares: `--help`/`-h` prints usage and
 * returns undefined; unknown flags become a UserError that names the flag and points at --help.
 */
function parseCommandArgs<O extends Options>(
  command: Pick<Command, 'name' | 'usage'>,
  argv: string[],
  options: O,
  allowPositionals = false,
) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals,
      strict: true,
    });
  } catch (err) {
    throw new UserError(`${command.name}: ${(err as Error).message}\nRun with --help for usage.`, 2);
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(command.usage.endsWith('\n') ? command.usage : `${command.usage}\n`);
    return undefined;
  }
  return parsed;
}

/**
 * One command-line flag, declared once: the parser and `--help` are both made from it (as cert-manager's
 * AddConfigFlags: https://github.com/cert-manager/cert-manager/blob/master/cmd/webhook/app/options/options.go).
 */
export interface Flag<T> {
  /** What the value is called in --help (N, D, DIR); none for a switch such as --force. */
  arg?: string;
  help: string;
  /** The value when the flag is not given. */
  default: T;
  /** The default as --help shows it where the value itself would not say it ('' shows none). */
  defaultHelp?: string;
  /** How --help writes a value (default String). */
  show?(value: T): string;
  /** Turns the given text into the value; throws a UserError naming the flag. */
  parse(raw: string, flag: string): T;
  /** A switch: given or not, no value (`--force`). */
  switch?: boolean;
  /** Repeatable (`--host a --host b`); parse gets each value. */
  multiple?: boolean;
  /** An older name that still works, shown in --help as deprecated. */
  deprecatedAlias?: string;
}

export type Flags = Record<string, Flag<unknown>>;
export type FlagValues<F extends Flags> = { [K in keyof F]: F[K] extends Flag<infer T> ? T : never };

export interface ParsedFlags<F extends Flags> {
  values: FlagValues<F>;
  /** The flags given on the command line (under their table names, aliases included). */
  given: ReadonlySet<keyof F & string>;
  positionals: string[];
}

/** A Go-style duration ("15s", "500ms", "2m", "1h") for --help, from milliseconds. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const)
    if (ms > 0 && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

export const stringFlag = (
  help: string,
  opts: { arg?: string; default?: string; defaultHelp?: string; deprecatedAlias?: string } = {},
): Flag<string | undefined> => ({ arg: 'VALUE', ...opts, help, default: opts.default, parse: (raw) => raw });

/** A string flag that has a default, so its value is always a string. */
export const stringWithDefault = (help: string, value: string, arg = 'VALUE'): Flag<string> => ({
  arg,
  help,
  default: value,
  parse: (raw) => raw,
});

export const stringsFlag = (help: string, arg = 'VALUE'): Flag<string[]> => ({
  arg,
  help,
  default: [],
  defaultHelp: '',
  multiple: true,
  parse: (raw) => [raw],
});

export const switchFlag = (help: string): Flag<boolean> => ({
  help,
  default: false,
  defaultHelp: '',
  switch: true,
  parse: () => true,
});

export const intFlag = (
  help: string,
  value: number,
  opts: { arg?: string; defaultHelp?: string; deprecatedAlias?: string } = {},
): Flag<number> => ({ arg: 'N', ...opts, help, default: value, parse: parseInt });

export const durationFlag = (help: string, valueMs: number, opts: { defaultHelp?: string } = {}): Flag<number> => ({
  arg: 'D',
  ...opts,
  help,
  default: valueMs,
  parse: parseDuration,
  show: formatDuration,
});

/** A true/false flag given as a value (`--leader-elect=false`), as Go's flag package accepts. */
export const boolFlag = (help: string, value: boolean): Flag<boolean> => ({
  arg: 'true|false',
  help,
  default: value,
  parse: parseBool,
});

/** One of a fixed set of words (listed in --help). */
export function enumFlag<const V extends string>(
  values: readonly V[],
  help: string,
  value: V,
  arg = values.join('|'),
): Flag<V> {
  return {
    arg,
    help,
    default: value,
    parse(raw, flag) {
      if (!(values as readonly string[]).includes(raw))
        throw new UserError(`--${flag} must be one of ${values.join(', ')}, got "${raw}"`, 2);
      return raw as V;
    },
  };
}

/** Parses a non-negative integer flag value, with a message naming the flag. */
export function parseInt(value: string, flag: string): number {
  if (!/^\d+$/.test(value)) throw new UserError(`--${flag} must be a non-negative integer, got "${value}"`, 2);
  return Number(value);
}

/** Parses a Go-style duration flag ("15s", "500ms", "2m", "1h") into milliseconds. */
export function parseDuration(value: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value);
  if (!m) throw new UserError(`--${flag} must be a duration such as 15s, 500ms or 2m, got "${value}"`, 2);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}

function parseBool(value: string, flag: string): boolean {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new UserError(`--${flag} must be true or false, got "${value}"`, 2);
}

function defaultText(flag: Flag<unknown>): string {
  if (flag.defaultHelp !== undefined) return flag.defaultHelp;
  const d = flag.default;
  if (d === undefined) return '';
  return flag.show ? flag.show(d) : String(d);
}

const HELP_WIDTH = 110;
const NAME_COLUMN = 37;

/** The `Flags:` section of --help, one entry a flag of the table, wrapped; `-h, --help` last. */
export function flagsHelp(flags: Flags, withHelp = true): string {
  const entries = Object.entries(flags).flatMap(([name, f]) => {
    const d = defaultText(f);
    const main = {
      left: `--${name}${f.arg ? ` ${f.arg}` : ''}`,
      text: `${f.help}${d ? ` (default ${d})` : ''}`,
    };
    if (!f.deprecatedAlias) return [main];
    return [main, { left: `--${f.deprecatedAlias}${f.arg ? ` ${f.arg}` : ''}`, text: `deprecated: use --${name}` }];
  });
  if (withHelp) entries.push({ left: '-h, --help', text: 'show this help' });
  return entries
    .map(({ left, text }) => {
      const lines = wrap(text, HELP_WIDTH - NAME_COLUMN);
      const head = `  ${left}`;
      const first =
        head.length < NAME_COLUMN
          ? `${head.padEnd(NAME_COLUMN)}${lines[0]}`
          : `${head}\n${' '.repeat(NAME_COLUMN)}${lines[0]}`;
      return [first, ...lines.slice(1).map((l) => ' '.repeat(NAME_COLUMN) + l)].join('\n');
    })
    .join('\n');
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines;
}

/**
 * Parses `argv` against a flag table with the conventions every subcommand shares: `--help`/`-h` prints usage
 * and returns undefined; unknown flags, bad values and a flag given under both its names are UserErrors that
 * name the flag.
 */
export function parseFlags<F extends Flags>(
  command: Pick<Command, 'name' | 'usage'>,
  argv: string[],
  flags: F,
  allowPositionals = false,
): ParsedFlags<F> | undefined {
  const options: Options = {};
  for (const [name, f] of Object.entries(flags)) {
    const option = { type: f.switch ? 'boolean' : 'string', multiple: f.multiple ?? false } as const;
    options[name] = option;
    if (f.deprecatedAlias) options[f.deprecatedAlias] = option;
  }
  const parsed = parseCommandArgs(command, argv, options, allowPositionals);
  if (!parsed) return undefined;
  const raw = parsed.values as Record<string, string | boolean | (string | boolean)[] | undefined>;
  const values: Record<string, unknown> = {};
  const given = new Set<string>();
  for (const [name, f] of Object.entries(flags)) {
    const alias = f.deprecatedAlias;
    if (alias && raw[name] !== undefined && raw[alias] !== undefined)
      throw new UserError(`--${name} and --${alias} (its deprecated name) cannot both be set`, 2);
    const used = alias && raw[alias] !== undefined ? alias : name;
    const value = raw[used];
    if (value === undefined) {
      values[name] = f.default;
      continue;
    }
    given.add(name);
    values[name] = Array.isArray(value)
      ? value.flatMap((v) => f.parse(String(v), used) as unknown[])
      : f.parse(String(value), used);
  }
  return { values: values as FlagValues<F>, given: given as Set<keyof F & string>, positionals: parsed.positionals };
}

/**
 * A command from its flag table: `run` gets the parsed flags (`--help` prints `usage` and exits 0 without calling
 * it; with `positionals`, arguments that are not flags are allowed and passed on).
 */
export function defineCommand<F extends Flags>(spec: {
  name: string;
  summary: string;
  usage: string;
  flags: F;
  positionals?: boolean;
  run(parsed: ParsedFlags<F>): Promise<number>;
}): Command {
  return {
    name: spec.name,
    summary: spec.summary,
    usage: spec.usage,
    async run(argv) {
      const parsed = parseFlags(spec, argv, spec.flags, spec.positionals ?? false);
      return parsed ? spec.run(parsed) : 0;
    },
  };
}

/** The top-level help: every command with its summary. */
export const topUsage = (commands: readonly Command[]) =>
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

/**
 * Runs the command `argv[0]` names, and sets the exit code: a UserError is printed as a message only, anything
 * else is a bug and keeps its stack.
 */
export async function runMain(commands: readonly Command[], argv: string[]): Promise<void> {
  // Output piped into a reader that stops early (`cluster status | head`): stop quietly, as a Go CLI does on SIGPIPE,
  // instead of a stack trace from the unhandled EPIPE.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(process.exitCode ?? 0);
  });
  try {
    const [name, ...rest] = argv;
    if (!name || name === '--help' || name === '-h' || name === 'help') {
      console.log(topUsage(commands));
      process.exitCode = name ? 0 : 2;
      return;
    }
    const command = commands.find((c) => c.name === name);
    if (!command) throw new UserError(`unknown command "${name}"\n\n${topUsage(commands)}`, 2);
    process.exitCode = await command.run(rest);
  } catch (err) {
    if (err instanceof UserError) {
      console.error(`error: ${err.message}`);
      process.exitCode = err.exitCode;
    } else {
      // An unexpected failure is a bug: keep the stack for the report, but say so plainly.
      console.error('error: unexpected failure (this is a bug, please report it):');
      console.error(err);
      process.exitCode = 70;
    }
  }
}
