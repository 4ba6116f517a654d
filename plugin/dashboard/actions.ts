// The dashboard's actions (pause, resume, partition, canary promote/pause/resume/fail, undo) are `kubectl ads`'s own
// commands (plugin/commands.ts runPause, runPartition, runCanary, runUndo) run with the arguments the CLI would parse,
// against the user's kubeconfig: the same rules (a Failed canary cannot be promoted, a no-op writes nothing, undo's
// conditional JSON patch), the same messages, the same apiserver errors in kubectl's words (plugin/errors.ts).
// This file only turns a request into those arguments (parseActionRequest) and an outcome into an HTTP answer
// (actionErrorResponse); both pure.
import { ApiError, TransportError } from '../../src/k8s/errors.ts';
import { UsageError, type ParsedArgs } from '../args.ts';
import { parsePartition } from '../daemonset.ts';
import { explainError, PluginError } from '../errors.ts';
import type { ClusterConnection } from '../connect.ts';
import { ACTIONS, type ActionBody, type ActionName } from './views.ts';

export interface ActionRequest {
  action: ActionName;
  namespace: string;
  name: string;
  /** What `kubectl ads` would have parsed: the command word first, as the CLI's positionals. */
  args: ParsedArgs;
  /** The same as a command line, for the page and the log. */
  command: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

const isActionName = (a: string): a is ActionName => (ACTIONS as readonly string[]).includes(a);

/** A non-negative integer given as a number or a string of digits; undefined otherwise. */
function wholeNumber(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v);
  return undefined;
}

/**
 * The CLI arguments for `action` on DaemonSet `name` (namespace `namespace`), or why the request is bad (HTTP 400):
 * an unknown action, a partition that is not N or N% (parsePartition's message), a step that is not a positive
 * integer, a revision that is not a non-negative integer, fields the action does not take.
 */
export function parseActionRequest(
  action: string,
  namespace: string,
  name: string,
  body: unknown,
): Parsed<ActionRequest> {
  if (!isActionName(action))
    return { ok: false, message: `unknown action "${action}": want one of ${ACTIONS.join(', ')}` };
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body)))
    return { ok: false, message: 'the request body must be a JSON object' };
  const b = (body ?? {}) as ActionBody & Record<string, unknown>;
  const allowed: Record<ActionName, string[]> = {
    pause: [],
    resume: [],
    partition: ['value'],
    'partition-step': ['step'],
    'canary-promote': [],
    'canary-pause': [],
    'canary-resume': [],
    'canary-fail': [],
    undo: ['toRevision'],
  };
  const extra = Object.keys(b).filter((k) => !allowed[action].includes(k));
  if (extra.length > 0)
    return { ok: false, message: `${action} takes no field ${extra.map((k) => `"${k}"`).join(', ')}` };
  const ns = ` -n ${namespace}`;
  const done = (positionals: string[], flags: Record<string, string> = {}): Parsed<ActionRequest> => {
    const flagText = Object.entries(flags).map(([k, v]) => ` --${k} ${v}`);
    return {
      ok: true,
      value: {
        action,
        namespace,
        name,
        args: { positionals, flags },
        command: `kubectl ads ${positionals.join(' ')}${flagText.join('')}${ns}`,
      },
    };
  };
  switch (action) {
    case 'pause':
    case 'resume':
      return done([action, name]);
    case 'partition': {
      const raw = typeof b.value === 'number' ? String(b.value) : b.value;
      if (typeof raw !== 'string' || raw === '') return { ok: false, message: 'partition needs a value: N or N%' };
      try {
        parsePartition(raw);
      } catch (err) {
        return { ok: false, message: (err as Error).message };
      }
      return done(['partition', name, raw]);
    }
    case 'partition-step': {
      const step = wholeNumber(b.step);
      if (step === undefined || step < 1)
        return {
          ok: false,
          message: `invalid step ${JSON.stringify(b.step ?? null)}: want a positive integer (nodes)`,
        };
      return done(['partition', name], { step: String(step) });
    }
    case 'undo': {
      if (b.toRevision === undefined || b.toRevision === null || b.toRevision === '') return done(['undo', name]);
      const to = wholeNumber(b.toRevision);
      if (to === undefined)
        return { ok: false, message: `invalid revision ${JSON.stringify(b.toRevision)}: want a non-negative integer` };
      return done(['undo', name], to === 0 ? {} : { 'to-revision': String(to) });
    }
    default:
      return done(['canary', action.slice('canary-'.length), name]);
  }
}

/** What the page gets when an action fails: the HTTP status and the message, never a stack trace. */
export function actionErrorResponse(err: unknown): { status: number; message: string } {
  // A refusal by the CLI's own rules ("the canary of revision x failed: it cannot be promoted...").
  if (err instanceof UsageError) return { status: 400, message: `error: ${err.message}` };
  if (err instanceof PluginError) return { status: 409, message: explainError(err).text };
  if (err instanceof ApiError) {
    // The apiserver's answer as kubectl prints it ("Error from server (Forbidden): ..."), with its status code
    // where the caller can act on it; an apiserver failure is a bad gateway for us.
    const status = [400, 401, 403, 404, 409, 410, 422, 429].includes(err.code) ? err.code : 502;
    return { status, message: explainError(err).text };
  }
  if (err instanceof TransportError) return { status: 502, message: explainError(err).text };
  if (err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError'))
    return { status: 504, message: `error: the apiserver did not answer in time (${err.message})` };
  return { status: 500, message: 'error: unexpected failure in kubectl ads dashboard (see its terminal output)' };
}

export interface ActionOutcome {
  /** What kubectl ads printed on stdout ("daemonset.apps.kruise.io/foo paused"). */
  message: string;
  /** Its stderr lines (warnings, notes). */
  warnings: string[];
}

/** Runs actions; the server takes any (tests give a fake). Throws what the command throws. */
export interface DashboardActions {
  run(request: ActionRequest): Promise<ActionOutcome>;
}

/** Actions on a live cluster: the CLI's command functions with the dashboard's connection (the user's kubeconfig). */
export class KubeActions implements DashboardActions {
  constructor(
    private readonly conn: ClusterConnection,
    private readonly timeoutMs = 60_000,
  ) {}

  async run(request: ActionRequest): Promise<ActionOutcome> {
    // Loaded here: the commands pull in every verb's module, which only an action needs.
    const { runCanary, runPartition, runPause, runUndo } = await import('../commands.ts');
    const command = {
      pause: runPause(true),
      resume: runPause(false),
      partition: runPartition,
      'partition-step': runPartition,
      'canary-promote': runCanary,
      'canary-pause': runCanary,
      'canary-resume': runCanary,
      'canary-fail': runCanary,
      undo: runUndo,
    }[request.action];
    let out = '';
    let err = '';
    const conn = { ...this.conn, namespace: request.namespace };
    await command({
      args: request.args,
      io: {
        out: (t) => void (out += t),
        err: (t) => void (err += t),
        isTTY: false,
        columns: 120,
        signal: AbortSignal.timeout(this.timeoutMs),
        now: () => Date.now(),
      },
      conn: () => conn,
    });
    const lines = (t: string) => t.split('\n').filter((l) => l.trim() !== '');
    return { message: lines(out).join('\n'), warnings: lines(err) };
  }
}
