// The apiserver's errors as client-go's k8s.io/apimachinery/pkg/api/errors reads them: metav1.Status, its reasons,
// and the predicates the controllers branch on (IsNotFound, IsConflict, ...).

/** metav1.Status, as the apiserver returns it for failures (and in watch ERROR events). */
export interface Status {
  apiVersion?: string;
  kind?: 'Status';
  status?: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  code?: number;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: unknown[];
    retryAfterSeconds?: number;
  };
  [key: string]: unknown;
}

/** metav1.StatusReason values the controller branches on; others pass through as strings. */
export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'TooManyRequests'
  | 'Invalid'
  | 'Forbidden'
  | 'Unauthorized'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'UnsupportedMediaType'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout'
  | 'Unknown'
  | (string & {});

function reasonForCode(code: number): StatusReason {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 409:
      return 'Conflict';
    case 410:
      return 'Gone';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 500:
      return 'InternalError';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'Timeout';
    default:
      return 'Unknown';
  }
}

/** The apiserver answered with a failure status. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: StatusReason;
  /** Seconds the server asked us to wait (Retry-After header or status details), if any. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly verb: string,
    readonly path: string,
    code: number,
    readonly status: Status | undefined,
    retryAfterSeconds?: number,
  ) {
    const reason = status?.reason || reasonForCode(code);
    super(`${verb} ${path}: ${code} ${reason}: ${status?.message ?? ''}`.trimEnd());
    this.name = 'ApiError';
    this.code = code;
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds ?? status?.details?.retryAfterSeconds;
  }
}

/**
 * A write that a client scope's `beforeWrite` refused before it was sent (nothing reached the apiserver): the
 * controller's leadership fence after the Lease was lost or could not be renewed in time.
 */
export class WriteRefusedError extends Error {
  constructor(
    readonly verb: string,
    readonly path: string,
    reason: string,
  ) {
    super(`${verb} ${path}: not sent: ${reason}`);
    this.name = 'WriteRefusedError';
  }
}

/** The request never got an HTTP answer: connection refused or reset, DNS, TLS, timeout. */
export class TransportError extends Error {
  readonly errno: string | undefined;
  constructor(
    readonly verb: string,
    readonly path: string,
    cause: unknown,
  ) {
    const errno = (cause as { code?: string } | undefined)?.code;
    super(`${verb} ${path}: ${(cause as Error | undefined)?.message ?? String(cause)}`, { cause });
    this.name = 'TransportError';
    this.errno = errno;
  }
}

const hasReason = (err: unknown, ...reasons: StatusReason[]) => err instanceof ApiError && reasons.includes(err.reason);
export const isNotFound = (err: unknown) => hasReason(err, 'NotFound') || (err instanceof ApiError && err.code === 404);
export const isAlreadyExists = (err: unknown) => hasReason(err, 'AlreadyExists');
/** 409 that is not AlreadyExists: an optimistic-concurrency (resourceVersion / precondition) failure. */
export const isConflict = (err: unknown) => hasReason(err, 'Conflict');
/** 410: resourceVersion too old (watch or list continue token); the cure is a relist. */
export const isGone = (err: unknown) =>
  err instanceof ApiError && (err.code === 410 || hasReason(err, 'Gone', 'Expired'));
export const isForbidden = (err: unknown) => hasReason(err, 'Forbidden');
export const isAbortError = (err: unknown) =>
  err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');

/** Turns a watch ERROR event's Status into an ApiError (410 there means "relist"). */
export function apiErrorFromStatus(verb: string, path: string, status: Status): ApiError {
  return new ApiError(verb, path, status.code ?? 500, status);
}
