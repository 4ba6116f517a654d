// Admission responses by name, as controller-runtime's admission.Allowed / Patched / Denied / Errored and
// Response.Complete (https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/webhook/admission/response.go):
// each carries its verdict from where it is made, so nothing downstream has to guess it from the fields, and the
// request's uid is set in one place, complete(), when the review is answered.
import type { Operation } from 'fast-json-patch';
import type { Status } from '../src/api/field.ts';

/** The metrics' and logs' `verdict` label. */
export type Verdict = 'allowed' | 'denied' | 'patched' | 'errored';

/** A failure status without causes: what admission.Errored puts in the response. */
export interface ErrorStatus {
  metadata: Record<string, never>;
  status: 'Failure';
  code: number;
  reason?: string;
  message: string;
}

/** A handler's answer, before it is tied to a request. */
export interface Response {
  readonly verdict: Verdict;
  readonly allowed: boolean;
  readonly status?: Status | ErrorStatus;
  /** Patched only: the JSON patch, encoded by complete(). */
  readonly patches?: readonly Operation[];
  /** Patched only: `JSON.stringify(patches)` when the handler has it already (measuring it against the limit). */
  readonly patchText?: string;
}

/** The `response` of an AdmissionReview as sent. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: Status | ErrorStatus;
  patch?: string;
  patchType?: 'JSONPatch';
  warnings?: string[];
}

/** admission.Allowed: let the request through unchanged. */
export const allowed = (): Response => ({ verdict: 'allowed', allowed: true });

/**
 * admission.Patched: let the request through with the object changed by `patches` (none: allowed). `text` is their
 * JSON when the caller has made it already, so it is not made twice.
 */
export const patched = (patches: readonly Operation[], text?: string): Response =>
  patches.length === 0
    ? allowed()
    : { verdict: 'patched', allowed: true, patches, ...(text === undefined ? {} : { patchText: text }) };

/** admission.Denied: refuse the object, with a status that says why (e.g. 422 Invalid and its causes). */
export const denied = (status: Status): Response => ({ verdict: 'denied', allowed: false, status });

/** admission.Errored: the request could not be handled; the apiserver shows the message as the request's error. */
export function errored(code: number, message: string): Response {
  const reason = REASONS[code];
  return {
    verdict: 'errored',
    allowed: false,
    status: { metadata: {}, status: 'Failure', code, ...(reason ? { reason } : {}), message },
  };
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  413: 'RequestEntityTooLarge',
  500: 'InternalError',
};

/** Response.Complete: the response for the request `uid`, with the patch (if any) encoded as JSONPatch. */
export function complete(res: Response, uid: string): AdmissionResponse {
  return {
    uid,
    allowed: res.allowed,
    ...(res.status ? { status: res.status } : {}),
    ...(res.patches
      ? {
          patchType: 'JSONPatch' as const,
          patch: Buffer.from(res.patchText ?? JSON.stringify(res.patches)).toString('base64'),
        }
      : {}),
  };
}
