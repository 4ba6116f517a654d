import { pino, type Logger } from 'pino';

export type { Logger };

let root: Logger | undefined;

/**
 * The logger runtime pieces use when the caller passes none: JSON to stdout at $LOG_LEVEL
 * (default info). The manager should pass its own (with base fields) instead.
 */
export function defaultLogger(): Logger {
  root ??= pino({ level: process.env.LOG_LEVEL ?? 'info' });
  return root;
}
