// AdmissionReview handling as pure functions: body in, HTTP status + body + verdict out. No I/O, no API calls;
// the Fastify layer (app.ts) only parses, times and logs around these.
import { API_GROUP, KIND, VERSION } from '../src/api/constants.ts';
import { defaultingPatch, isObject, type JsonObject } from '../src/api/defaults.ts';
import { invalidStatus, type Status } from '../src/api/field.ts';
import { validateDaemonSet, validateDaemonSetUpdate } from '../src/api/validation.ts';

export const ADMISSION_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionReviewVersion = (typeof ADMISSION_VERSIONS)[number];

export type Verdict = 'allowed' | 'denied' | 'patched' | 'errored';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource?: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
  [key: string]: unknown;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?:
    Status | { metadata: Record<string, never>; status: 'Failure'; code: number; reason?: string; message: string };
  patch?: string;
  patchType?: 'JSONPatch';
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: AdmissionReviewVersion;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

/** What the HTTP layer sends back, plus what it logs and counts. */
export interface AdmissionOutcome {
  httpStatus: number;
  body: AdmissionReview | { message: string };
  verdict: Verdict;
  /** namespace/name of the object, for logs. */
  key?: string;
  uid?: string;
  operation?: string;
  /** The rejection or error message, for logs. */
  message?: string;
}

export type AdmissionHandler = (request: AdmissionRequest) => AdmissionResponse;

/** A body that is not an AdmissionReview at all: the apiserver gets a plain 400. */
function badRequest(message: string): AdmissionOutcome {
  return { httpStatus: 400, body: { message }, verdict: 'errored', message };
}

/** admission.Errored: a review the apiserver shows as the error of the request. */
export function erroredResponse(uid: string, code: number, message: string): AdmissionResponse {
  const reason = code === 400 ? 'BadRequest' : code === 500 ? 'InternalError' : undefined;
  return {
    uid,
    allowed: false,
    status: { metadata: {}, status: 'Failure', code, ...(reason ? { reason } : {}), message },
  };
}

function objectKey(req: AdmissionRequest): string {
  const meta = isObject(req.object) && isObject(req.object.metadata) ? req.object.metadata : undefined;
  const name = (typeof meta?.name === 'string' && meta.name) || req.name || '';
  const namespace = (typeof meta?.namespace === 'string' && meta.namespace) || req.namespace || '';
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * Checks the request is for an apps.kruise.io/v1alpha1 DaemonSet with decodable objects; returns the error
 * response when not (Kruise answers these with an errored review, code 400).
 */
function checkRequest(req: AdmissionRequest): AdmissionResponse | undefined {
  const { group, version, kind } = req.kind;
  if (group !== API_GROUP || kind !== KIND)
    return erroredResponse(req.uid, 400, `unsupported kind: ${group}/${version}, Kind=${kind}`);
  if (version !== VERSION) return erroredResponse(req.uid, 400, `unsupported version: ${version}`);
  if (req.operation === 'CREATE' || req.operation === 'UPDATE') {
    if (!isObject(req.object)) return erroredResponse(req.uid, 400, 'request.object is not a JSON object');
    if (req.operation === 'UPDATE' && !isObject(req.oldObject))
      return erroredResponse(req.uid, 400, 'request.oldObject is not a JSON object');
  }
  return undefined;
}

/** Only CREATE and UPDATE of the main resource are checked; everything else is let through. */
const admitsAsIs = (req: AdmissionRequest) =>
  (req.operation !== 'CREATE' && req.operation !== 'UPDATE') || Boolean(req.subResource);

/** The mutating webhook: Kruise defaults and, for a new or changed template, apps/v1 template defaults. */
export const mutateDaemonSet: AdmissionHandler = (req) => {
  const error = checkRequest(req);
  if (error) return error;
  if (admitsAsIs(req)) return { uid: req.uid, allowed: true };
  const old = req.operation === 'UPDATE' ? (req.oldObject as JsonObject) : undefined;
  const patch = defaultingPatch(req.object as JsonObject, old);
  if (patch.length === 0) return { uid: req.uid, allowed: true };
  return {
    uid: req.uid,
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
  };
};

/** The validating webhook: a rejection is 422 Invalid with one cause per field error. */
export const validateDaemonSetAdmission: AdmissionHandler = (req) => {
  const error = checkRequest(req);
  if (error) return error;
  if (admitsAsIs(req)) return { uid: req.uid, allowed: true };
  const obj = req.object as JsonObject;
  const errors =
    req.operation === 'UPDATE' ? validateDaemonSetUpdate(obj, req.oldObject as JsonObject) : validateDaemonSet(obj);
  if (errors.length === 0) return { uid: req.uid, allowed: true };
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  const name = (typeof meta.name === 'string' && meta.name) || req.name || '';
  return { uid: req.uid, allowed: false, status: invalidStatus(API_GROUP, KIND, name, errors) };
};

function verdictOf(res: AdmissionResponse): Verdict {
  if (res.allowed) return res.patch ? 'patched' : 'allowed';
  return res.status && 'details' in res.status ? 'denied' : 'errored';
}

/**
 * Handles one AdmissionReview body (already JSON-parsed). Not an AdmissionReview → HTTP 400; a review for
 * the wrong kind/version or with an undecodable object → an errored review; an unexpected failure → an
 * errored review with code 500 and a generic message (the caller logs `cause`).
 */
export function handleAdmissionReview(
  body: unknown,
  handler: AdmissionHandler,
): AdmissionOutcome & { cause?: unknown } {
  if (!isObject(body)) return badRequest('request body is not a JSON object');
  const apiVersion = body.apiVersion;
  if (body.kind !== 'AdmissionReview')
    return badRequest(`expected kind AdmissionReview, got ${JSON.stringify(body.kind ?? null)}`);
  if (!ADMISSION_VERSIONS.includes(apiVersion as AdmissionReviewVersion))
    return badRequest(`unsupported AdmissionReview apiVersion ${JSON.stringify(apiVersion ?? null)}`);
  const req = body.request;
  if (!isObject(req) || typeof req.uid !== 'string' || req.uid === '')
    return badRequest('AdmissionReview has no request or no request.uid');
  if (!isObject(req.kind) || typeof req.operation !== 'string')
    return badRequest('AdmissionReview request has no kind or operation');
  const request = req as unknown as AdmissionRequest;
  const key = objectKey(request);
  let response: AdmissionResponse;
  let cause: unknown;
  try {
    response = handler(request);
  } catch (err) {
    cause = err;
    response = erroredResponse(request.uid, 500, 'internal error while handling the admission request');
  }
  const review: AdmissionReview = {
    apiVersion: apiVersion as AdmissionReviewVersion,
    kind: 'AdmissionReview',
    response,
  };
  const message = response.status?.message;
  return {
    httpStatus: 200,
    body: review,
    verdict: verdictOf(response),
    key,
    uid: request.uid,
    operation: request.operation,
    ...(message ? { message } : {}),
    ...(cause ? { cause } : {}),
  };
}
