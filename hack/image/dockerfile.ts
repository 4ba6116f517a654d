// Reads what the Dockerfile's final stage sets, so the Docker-less build (hack/image/manager.ts) takes the
// image's config from the Dockerfile instead of repeating it. Only the instructions our Dockerfile uses, in the
// forms it uses them (https://docs.docker.com/reference/dockerfile/); anything else in the final stage is an
// error, so a change to the Dockerfile cannot be silently left out of the other build.

export interface CopyInstruction {
  /** The stage (or image) copied from, or undefined for the build context. */
  from: string | undefined;
  sources: string[];
  /** Absolute: resolved against the WORKDIR in effect. */
  dest: string;
}

export interface FinalStage {
  /** The FROM line's image, ARGs substituted. */
  base: string;
  env: [string, string][];
  user: string | undefined;
  workdir: string | undefined;
  /** As the image config writes them: "9876/tcp". */
  exposedPorts: string[];
  entrypoint: string[] | undefined;
  cmd: string[] | undefined;
  labels: [string, string][];
  copies: CopyInstruction[];
}

/** Logical lines: comments dropped, backslash continuations joined (the escape character is the default). */
function instructions(text: string): { keyword: string; args: string; line: number }[] {
  const out: { keyword: string; args: string; line: number }[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    if (!pending && /^\s*(#|$)/.test(line)) return;
    if (pending && /^\s*#/.test(line)) return; // comment lines inside a continuation are skipped
    if (!pending) start = i + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\S+)\s*(.*)$/.exec(full)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!, line: start });
  });
  return out;
}

/** `KEY=VALUE KEY2="V 2"` (or the legacy `KEY VALUE`), as ENV and LABEL take them. */
function keyValues(args: string, where: string): [string, string][] {
  if (!args.includes('=')) {
    const m = /^(\S+)\s+(.*)$/.exec(args);
    if (!m) throw new Error(`${where}: expected KEY=VALUE`);
    return [[m[1]!, m[2]!]];
  }
  const pairs: [string, string][] = [];
  const re = /\s*([^\s=]+)=("(?:[^"\\]|\\.)*"|\S*)/gy;
  let m: RegExpExecArray | null;
  while ((m = re.exec(args))) {
    const v = m[2]!;
    pairs.push([m[1]!, v.startsWith('"') ? (JSON.parse(v) as string) : v]);
    if (re.lastIndex === args.length) return pairs;
  }
  throw new Error(`${where}: cannot read ${JSON.stringify(args)} as KEY=VALUE pairs`);
}

function execForm(args: string, where: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string'))
    throw new Error(`${where}: only the exec form (a JSON array of strings) is supported`);
  return parsed as string[];
}

function substitute(value: string, args: Map<string, string>): string {
  return value.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a?: string, b?: string) => args.get((a ?? b)!) ?? '');
}

function resolvePath(dest: string, workdir: string | undefined): string {
  const abs = dest.startsWith('/') ? dest : `${workdir ?? '/'}/${dest}`;
  const parts: string[] = [];
  for (const p of abs.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return `/${parts.join('/')}`;
}

/** The final stage of a Dockerfile (the text), with the config it gives the image. */
export function parseFinalStage(text: string): FinalStage {
  const all = instructions(text);
  const globalArgs = new Map<string, string>();
  let lastFrom = -1;
  all.forEach((ins, i) => {
    if (ins.keyword === 'FROM') lastFrom = i;
    else if (ins.keyword === 'ARG' && lastFrom === -1) {
      const [k, v] = ins.args.split('=', 2) as [string, string | undefined];
      globalArgs.set(k.trim(), v ?? '');
    }
  });
  if (lastFrom === -1) throw new Error('the Dockerfile has no FROM');
  const fromArgs = all[lastFrom]!.args.split(/\s+/).filter((a) => !a.startsWith('--'));
  const stage: FinalStage = {
    base: substitute(fromArgs[0]!, globalArgs),
    env: [],
    user: undefined,
    workdir: undefined,
    exposedPorts: [],
    entrypoint: undefined,
    cmd: undefined,
    labels: [],
    copies: [],
  };
  for (const ins of all.slice(lastFrom + 1)) {
    const where = `Dockerfile line ${ins.line} (${ins.keyword})`;
    switch (ins.keyword) {
      case 'ENV':
        stage.env.push(...keyValues(ins.args, where));
        break;
      case 'LABEL':
        stage.labels.push(...keyValues(ins.args, where));
        break;
      case 'USER':
        stage.user = ins.args.trim();
        break;
      case 'WORKDIR':
        stage.workdir = resolvePath(ins.args.trim(), stage.workdir);
        break;
      case 'EXPOSE':
        for (const p of ins.args.trim().split(/\s+/)) stage.exposedPorts.push(p.includes('/') ? p : `${p}/tcp`);
        break;
      case 'ENTRYPOINT':
        // ENTRYPOINT drops a CMD of the base image, not one set in this stage (BuildKit's dispatchEntrypoint:
        // https://github.com/moby/buildkit/blob/master/frontend/dockerfile/dockerfile2llb/convert.go); the base
        // image's CMD is not modelled, so there is nothing to drop.
        stage.entrypoint = execForm(ins.args, where);
        break;
      case 'CMD':
        stage.cmd = execForm(ins.args, where);
        break;
      case 'COPY': {
        const words = ins.args.split(/\s+/);
        const flags = words.filter((w) => w.startsWith('--'));
        const paths = words.filter((w) => !w.startsWith('--'));
        const unknown = flags.filter((f) => !f.startsWith('--from='));
        if (unknown.length > 0) throw new Error(`${where}: unsupported flag ${unknown.join(' ')}`);
        if (paths.length < 2) throw new Error(`${where}: expected SOURCE... DEST`);
        const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
        stage.copies.push({ from, sources: paths.slice(0, -1), dest: resolvePath(paths.at(-1)!, stage.workdir) });
        break;
      }
      default:
        throw new Error(`${where}: hack/image does not know this instruction in the final stage`);
    }
  }
  return stage;
}
