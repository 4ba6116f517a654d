// The logger of the client package and of the controllers on it, as klog is client-go's
// (https://github.com/kubernetes/klog): one root, made on first use.
import { pino, type Logger } from 'pino';

export type { Logger };

let root: Logger | undefined;

/**
 * The logger the client's pieces (reflector, queue, leader election, events) use when the caller passes none: JSON to stdout at $LOG_LEVEL
 * (default info). The manager should pass its own (with base fields) instead.
 */
export function defaultLogger(): Logger {
  root ??= pino({ level: process.env.LOG_LEVEL ?? 'info' });
  return root;
}
