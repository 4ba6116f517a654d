// Flags more than one command has, declared once (name, default and help) for all of them.
import { enumFlag, intFlag } from './command.ts';

/** The webhook's HTTPS port: the image's EXPOSE, the chart's webhook.port and every command's --webhook-port. */
export const WEBHOOK_PORT = 9876;
export const HEALTH_PORT = 8081;
export const METRICS_PORT = 8080;

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

export const logLevelFlag = enumFlag(LOG_LEVELS, 'the least severe log level written', 'info');
export const healthPortFlag = intFlag('plain HTTP /healthz and /readyz; 0 picks a free port', HEALTH_PORT);
export const metricsPortFlag = intFlag('plain HTTP /metrics; 0 picks a free port', METRICS_PORT);
