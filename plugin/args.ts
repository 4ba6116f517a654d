// Command-line parsing as kubectl's (spf13/pflag) reads it: `--flag value`, `--flag=value`, `-n value`, `-nvalue`,
// `-n=value`, booleans as `--watch` or `--watch=false`, flags before or after the positional arguments, and `--`
// ending the flags. node:util parseArgs cannot take `--watch=false`, which `kubectl rollout status` users type.
// Pure: the completion (plugin/completion.ts) parses the half-typed line with the same tables.

/** One flag of a command (or of every command: GLOBAL_FLAGS). */
export interface FlagSpec {
  name: string;
  short?: string;
  kind: 'string' | 'bool';
  /** What the value is called in --help. */
  arg?: string;
  help: string;
  /** The values completion offers (`-o json|yaml|wide`). */
  values?: readonly string[];
}

/** A mistake on the command line: printed as `error: <message>` with a pointer to --help, exit 1 (as kubectl). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface ParsedArgs {
  /** By flag name; a string flag given twice keeps the last value (pflag). */
  flags: Record<string, string | boolean>;
  positionals: string[];
}

/** The kubeconfig flags kubectl has, accepted by every command (and before the command name). */
export const GLOBAL_FLAGS: readonly FlagSpec[] = [
  { name: 'kubeconfig', kind: 'string', arg: 'PATH', help: 'Path to the kubeconfig file to use (only this file)' },
  { name: 'context', kind: 'string', arg: 'NAME', help: 'The name of the kubeconfig context to use' },
  {
    name: 'namespace',
    short: 'n',
    kind: 'string',
    arg: 'NS',
    help: "The namespace (default: the context's namespace, else default)",
  },
  { name: 'help', short: 'h', kind: 'bool', help: 'Help for the command' },
];

// strconv.ParseBool's spellings.
const BOOL_TRUE = new Set(['true', '1', 't', 'T', 'TRUE', 'True']);
const BOOL_FALSE = new Set(['false', '0', 'f', 'F', 'FALSE', 'False']);

function parseBool(flag: string, raw: string): boolean {
  if (BOOL_TRUE.has(raw)) return true;
  if (BOOL_FALSE.has(raw)) return false;
  throw new UsageError(
    `invalid argument "${raw}" for "${flag}" flag: strconv.ParseBool: parsing "${raw}": invalid syntax`,
  );
}

/** Where a half-typed command line stands, for completion. */
export interface PartialArgs extends ParsedArgs {
  /** The last token is a string flag still waiting for its value (`-n ` then TAB): that flag. */
  pendingFlag?: FlagSpec;
}

/**
 * Parses `argv` against `specs`. Strict: an unknown flag or a missing value is a UsageError with pflag's wording
 * ("unknown flag: --foo", "unknown shorthand flag: 'x' in -x", "flag needs an argument: --namespace").
 */
export function parseArgv(argv: readonly string[], specs: readonly FlagSpec[]): ParsedArgs {
  const r = scan(argv, specs, true);
  if (r.pendingFlag) throw new UsageError(`flag needs an argument: --${r.pendingFlag.name}`);
  return r;
}

/** parseArgv that skips what it does not know and reports a trailing flag waiting for its value (completion). */
export function parseArgvLenient(argv: readonly string[], specs: readonly FlagSpec[]): PartialArgs {
  return scan(argv, specs, false);
}

function scan(argv: readonly string[], specs: readonly FlagSpec[], strict: boolean): PartialArgs {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short as string, s]));
  const flags: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  const fail = (message: string) => {
    if (strict) throw new UsageError(message);
  };
  for (let i = 0; i < argv.length; i++) {
    const tok = argv[i] as string;
    if (tok === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (tok.startsWith('--') && tok.length > 2) {
      const eq = tok.indexOf('=');
      const name = eq < 0 ? tok.slice(2) : tok.slice(2, eq);
      const spec = byName.get(name);
      if (!spec) {
        fail(`unknown flag: --${name}`);
        continue;
      }
      if (spec.kind === 'bool') {
        flags[spec.name] = eq < 0 ? true : parseBool(name, tok.slice(eq + 1));
        continue;
      }
      if (eq >= 0) flags[spec.name] = tok.slice(eq + 1);
      else if (i + 1 < argv.length) flags[spec.name] = argv[++i] as string;
      else return { flags, positionals, pendingFlag: spec };
      continue;
    }
    // A negative number is a value, not shorthands (`partition NAME -1` is then refused for what it is).
    if (/^-\d/.test(tok)) {
      positionals.push(tok);
      continue;
    }
    if (tok.startsWith('-') && tok.length > 1) {
      // Shorthands, possibly grouped (-Aw) with the last one taking a value (-nfoo, -n=foo, -n foo).
      let j = 1;
      while (j < tok.length) {
        const c = tok[j] as string;
        const spec = byShort.get(c);
        if (!spec) {
          fail(`unknown shorthand flag: '${c}' in ${tok}`);
          break;
        }
        if (spec.kind === 'bool') {
          if (tok[j + 1] === '=') {
            flags[spec.name] = parseBool(c, tok.slice(j + 2));
            break;
          }
          flags[spec.name] = true;
          j++;
          continue;
        }
        const rest = tok.slice(j + 1);
        if (rest.length > 0) flags[spec.name] = rest.startsWith('=') ? rest.slice(1) : rest;
        else if (i + 1 < argv.length) flags[spec.name] = argv[++i] as string;
        else return { flags, positionals, pendingFlag: spec };
        break;
      }
      continue;
    }
    positionals.push(tok);
  }
  return { flags, positionals };
}

/** The value of a string flag, or undefined. */
export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags[name];
  return typeof v === 'string' ? v : undefined;
}

/** A boolean flag (false when absent unless `dflt`). */
export function boolFlag(args: ParsedArgs, name: string, dflt = false): boolean {
  const v = args.flags[name];
  return typeof v === 'boolean' ? v : dflt;
}

/** A non-negative integer flag value, or undefined when absent. */
export function intFlag(args: ParsedArgs, name: string): number | undefined {
  const v = stringFlag(args, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v))
    throw new UsageError(`invalid argument "${v}" for "--${name}" flag: must be a non-negative integer`);
  return Number(v);
}

/**
 * A Go duration (`time.ParseDuration` as `--timeout` takes it: "90s", "5m", "1h30m", "500ms", "0" for none) in
 * milliseconds.
 */
export function parseGoDuration(raw: string, flag: string): number {
  if (raw === '0') return 0;
  if (raw.length === 0) throw new UsageError(`invalid argument "" for "--${flag}" flag: time: invalid duration ""`);
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
  let total = 0;
  let at = 0;
  while (at < raw.length) {
    re.lastIndex = at;
    const m = re.exec(raw);
    if (!m) throw new UsageError(`invalid argument "${raw}" for "--${flag}" flag: time: invalid duration "${raw}"`);
    total += Number(m[1]) * (units[m[2] as string] as number);
    at = re.lastIndex;
  }
  return Math.round(total);
}

/** The `Flags:` block of --help. */
export function flagsHelp(specs: readonly FlagSpec[]): string {
  const left = (s: FlagSpec) =>
    `${s.short ? `-${s.short}, ` : '    '}--${s.name}${s.kind === 'string' ? ` ${s.arg ?? 'VALUE'}` : ''}`;
  const width = Math.max(...specs.map((s) => left(s).length)) + 3;
  return specs.map((s) => `  ${left(s).padEnd(width)}${s.help}`).join('\n');
}
