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
export function parseCommandArgs<O extends Options>(
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

/** Parses a non-negative integer flag value, with a message naming the flag. */
export function intFlag(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new UserError(`--${name} must be a non-negative integer, got "${value}"`, 2);
  return Number(value);
}

/** Parses a Go-style duration flag ("15s", "500ms", "2m", "1h") into milliseconds. */
export function durationFlag(name: string, value: string | undefined, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value);
  if (!m) throw new UserError(`--${name} must be a duration such as 15s, 500ms or 2m, got "${value}"`, 2);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}

/** Parses a true/false flag given as a string (`--leader-elect=false`), as Go's flag package accepts. */
export function boolFlag(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new UserError(`--${name} must be true or false, got "${value}"`, 2);
}
