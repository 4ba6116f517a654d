// AdmissionReview handling as pure functions: body in, HTTP status + body + verdict out. No I/O, no API calls;
// the Fastify layer (app.ts) only parses, times and logs around these.
import { API_GROUP, isServedVersion, KIND, type ServedVersion } from '../src/api/constants.ts';
import { defaultingPatch, isObject, templatePatchLowerBound, type JsonObject } from '../src/api/defaults.ts';
import { invalidStatus, type FieldError } from '../src/api/field.ts';
import { jsonTypeName, nestingError } from '../src/api/shape.ts';
import { shapeErrors, validateDaemonSet, validateDaemonSetUpdate } from '../src/api/validation.ts';
import { SETTING_API_GROUP, SETTING_KIND, SETTING_VERSION } from '../src/api/setting.ts';
import { settingDefaultingPatch } from '../src/api/setting-defaults.ts';
import {
  settingShapeErrors,
  validateDaemonSetSetting,
  validateDaemonSetSettingUpdate,
} from '../src/api/setting-validation.ts';
import { formatBytes, jsonTextWithin, MAX_PATCH_BYTES } from './limits.ts';
import {
  allowed,
  complete,
  denied,
  errored,
  patched,
  type AdmissionResponse,
  type Response,
  type Verdict,
} from './response.ts';

export type { AdmissionResponse, Verdict };

export const ADMISSION_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionReviewVersion = (typeof ADMISSION_VERSIONS)[number];

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

/** Whom a review's answer is for, and what for the logs. */
export interface ReviewIdentity {
  apiVersion: AdmissionReviewVersion;
  uid: string;
  key: string;
  operation: string;
}

/** A webhook: the request in, a named response (response.ts) out; the uid is handleAdmissionReview's to set. */
export type AdmissionHandler = (request: AdmissionRequest) => Response;

/** A value of the body in a message: a string quoted (at most 100 characters), anything else by its type. */
function shown(v: unknown): string {
  if (typeof v !== 'string') return v === undefined ? 'null' : jsonTypeName(v);
  return JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}...` : v);
}

/** A body that is not an AdmissionReview at all: the apiserver gets a plain 400. */
function badRequest(message: string): AdmissionOutcome {
  return { httpStatus: 400, body: { message }, verdict: 'errored', message };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
/** A string of the body in a message, at most 100 characters of it. */
const cut = (s: string): string => (s.length > 100 ? `${s.slice(0, 100)}...` : s);

/** The object's name, from the object or the request; only strings (the body is untrusted). */
function objectName(req: AdmissionRequest): string {
  const meta = isObject(req.object) && isObject(req.object.metadata) ? req.object.metadata : undefined;
  return str(meta?.name) || str(req.name);
}

function objectKey(req: AdmissionRequest): string {
  const meta = isObject(req.object) && isObject(req.object.metadata) ? req.object.metadata : undefined;
  const name = objectName(req);
  const namespace = str(meta?.namespace) || str(req.namespace);
  return namespace ? `${namespace}/${name}` : name;
}

/** The kind a webhook serves: its group and kind, and which versions of it. */
interface ServedKind<V extends string> {
  group: string;
  kind: string;
  isVersion: (v: string) => v is V;
}

const DAEMONSET: ServedKind<ServedVersion> = { group: API_GROUP, kind: KIND, isVersion: isServedVersion };
const SETTING: ServedKind<typeof SETTING_VERSION> = {
  group: SETTING_API_GROUP,
  kind: SETTING_KIND,
  isVersion: (v): v is typeof SETTING_VERSION => v === SETTING_VERSION,
};

/** `object.apiVersion` when it names another version than `version` (an absent, null or empty one is not checked). */
function apiVersionMismatch(obj: unknown, group: string, version: string): string | undefined {
  const apiVersion = isObject(obj) ? obj.apiVersion : undefined;
  if (apiVersion === undefined || apiVersion === null || apiVersion === '') return undefined;
  if (apiVersion === `${group}/${version}`) return undefined;
  return typeof apiVersion === 'string' ? JSON.stringify(cut(apiVersion)) : jsonTypeName(apiVersion);
}

/**
 * Checks the request is for the webhook's kind (an apps.kruise.io DaemonSet, or an advanced-daemonset.io
 * DaemonSetSetting) of a served version with decodable objects in that version, and returns that version; or the
 * error response when not (Kruise answers these with an errored review, code 400: "unsupported version" in
 * https://github.com/openkruise/kruise/blob/v1.9.0/pkg/webhook/daemonset/validating/daemonset_create_update_handler.go).
 * The version is request.kind.version: the apiserver sends the objects in the version the webhook registered for.
 */
function checkRequest<V extends string>(
  req: AdmissionRequest,
  served: ServedKind<V>,
): { error: Response } | { version: V } {
  const { group, version, kind } = req.kind;
  if (typeof group !== 'string' || typeof version !== 'string' || typeof kind !== 'string')
    return { error: errored(400, 'request.kind is not a group, version and kind of strings') };
  if (group !== served.group || kind !== served.kind)
    return { error: errored(400, `unsupported kind: ${cut(group)}/${cut(version)}, Kind=${cut(kind)}`) };
  // Kruise's text; the webhook configurations register only the served versions.
  if (!served.isVersion(version)) return { error: errored(400, `unsupported version: ${cut(version)}`) };
  if (req.operation === 'CREATE' || req.operation === 'UPDATE') {
    if (!isObject(req.object)) return { error: errored(400, 'request.object is not a JSON object') };
    if (req.operation === 'UPDATE' && !isObject(req.oldObject))
      return { error: errored(400, 'request.oldObject is not a JSON object') };
  }
  for (const [name, obj] of [
    ['request.object', req.object],
    ['request.oldObject', req.oldObject],
  ] as const) {
    const other = apiVersionMismatch(obj, served.group, version);
    if (other)
      return {
        error: errored(400, `${name} apiVersion ${other} does not match request.kind ${served.group}/${version}`),
      };
  }
  return { version };
}

/** admission/v1 Operation: https://github.com/kubernetes/api/blob/master/admission/v1/types.go */
const OPERATIONS: readonly string[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

/** Only CREATE and UPDATE of the main resource are checked; everything else is let through. */
const admitsAsIs = (req: AdmissionRequest) =>
  (req.operation !== 'CREATE' && req.operation !== 'UPDATE') || Boolean(req.subResource);

/**
 * A review the object cannot be read for: nested too deep, or fields of the wrong JSON type (shapeErrors). Denied
 * with code 400 BadRequest, as Kruise denies a body its typed decoder refuses, but with the field paths and
 * causes of an Invalid status. The old object (already stored) is only measured: its shape is not the user's to
 * fix in this request, and it is only ever compared, never walked alone.
 */
function shapeResponse(
  req: AdmissionRequest,
  served: ServedKind<string>,
  errorsOf: (obj: JsonObject) => FieldError[],
): Response | undefined {
  let errors: FieldError[] = errorsOf(req.object as JsonObject);
  if (errors.length === 0 && req.operation === 'UPDATE') {
    const oldTooDeep = nestingError(req.oldObject, 'oldObject');
    if (oldTooDeep) errors = [oldTooDeep];
  }
  if (errors.length === 0) return undefined;
  const status = invalidStatus(served.group, served.kind, objectName(req), errors);
  return denied({ ...status, reason: 'BadRequest', code: 400 });
}

const patchTooLarge = (detail: string, kind = 'DaemonSet') =>
  errored(
    400,
    `the defaulting patch of this ${kind} would be larger than the webhook's limit of ${formatBytes(MAX_PATCH_BYTES)} (${detail}); set the defaulted fields in the manifest, or use fewer containers, ports or volumes`,
  );

/**
 * The mutating webhook: Kruise defaults of the request's version and, for a new or changed template, apps/v1
 * template defaults. The patch's paths are into the object as sent, in its version.
 */
export const mutateDaemonSet: AdmissionHandler = (req) => {
  const checked = checkRequest(req, DAEMONSET);
  if ('error' in checked) return checked.error;
  const { version } = checked;
  if (admitsAsIs(req)) return allowed();
  const malformed = shapeResponse(req, DAEMONSET, (obj) => shapeErrors(obj, version));
  if (malformed) return malformed;
  const old = req.operation === 'UPDATE' ? (req.oldObject as JsonObject) : undefined;
  // The patch's certain part first: an object sure to exceed the limit is refused before it is copied.
  if (templatePatchLowerBound(req.object as JsonObject, old, MAX_PATCH_BYTES) > MAX_PATCH_BYTES)
    return patchTooLarge('counted from the defaults its containers lack');
  const patch = defaultingPatch(req.object as JsonObject, old, version);
  // Serialised a chunk at a time against the limit, not in one JSON.stringify, which a hostile object could make
  // tens of MiB; the text is the one sent.
  const text = jsonTextWithin(patch, MAX_PATCH_BYTES);
  if (text === undefined) return patchTooLarge(`${patch.length} operations`);
  return patched(patch, text);
};

/** The validating webhook, by the request's version: a rejection is 422 Invalid with one cause per field error. */
export const validateDaemonSetAdmission: AdmissionHandler = (req) => {
  const checked = checkRequest(req, DAEMONSET);
  if ('error' in checked) return checked.error;
  const { version } = checked;
  if (admitsAsIs(req)) return allowed();
  const malformed = shapeResponse(req, DAEMONSET, (obj) => shapeErrors(obj, version));
  if (malformed) return malformed;
  const obj = req.object as JsonObject;
  const errors =
    req.operation === 'UPDATE'
      ? validateDaemonSetUpdate(obj, req.oldObject as JsonObject, version)
      : validateDaemonSet(obj, version);
  if (errors.length === 0) return allowed();
  return denied(invalidStatus(API_GROUP, KIND, objectName(req), errors));
};

/**
 * The DaemonSetSetting's mutating webhook: spec.reference's kind and apiVersion (setting-defaults.ts). The same checks
 * in front as the DaemonSet's: the request's kind and version, the object's shape and nesting.
 */
export const mutateDaemonSetSetting: AdmissionHandler = (req) => {
  const checked = checkRequest(req, SETTING);
  if ('error' in checked) return checked.error;
  if (admitsAsIs(req)) return allowed();
  const malformed = shapeResponse(req, SETTING, settingShapeErrors);
  if (malformed) return malformed;
  const patch = settingDefaultingPatch(req.object as JsonObject);
  // At most two short strings today; measured all the same, so the limit holds whatever the defaults become.
  const text = jsonTextWithin(patch, MAX_PATCH_BYTES);
  if (text === undefined) return patchTooLarge(`${patch.length} operations`, 'DaemonSetSetting');
  return patched(patch, text);
};

/** The DaemonSetSetting's validating webhook (setting-validation.ts): a rejection is 422 Invalid with field paths. */
export const validateDaemonSetSettingAdmission: AdmissionHandler = (req) => {
  const checked = checkRequest(req, SETTING);
  if ('error' in checked) return checked.error;
  if (admitsAsIs(req)) return allowed();
  const malformed = shapeResponse(req, SETTING, settingShapeErrors);
  if (malformed) return malformed;
  const obj = req.object as JsonObject;
  const errors =
    req.operation === 'UPDATE'
      ? validateDaemonSetSettingUpdate(obj, req.oldObject as JsonObject)
      : validateDaemonSetSetting(obj);
  if (errors.length === 0) return allowed();
  return denied(invalidStatus(SETTING_API_GROUP, SETTING_KIND, objectName(req), errors));
};

/** The admission webhooks' handlers by name: the same on the main thread (app.ts) and in the pool (admission-worker.ts). */
export const ADMISSION_HANDLERS = {
  mutate: mutateDaemonSet,
  validate: validateDaemonSetAdmission,
  'mutate-setting': mutateDaemonSetSetting,
  'validate-setting': validateDaemonSetSettingAdmission,
} as const;
export type AdmissionWebhook = keyof typeof ADMISSION_HANDLERS;

/**
 * Handles one AdmissionReview body (already JSON-parsed). Not an AdmissionReview → HTTP 400; a review for
 * the wrong kind/version or with an undecodable object → an errored review; an unexpected failure → an
 * errored review with code 500 and a generic message (the caller logs `cause`). `onRequest` hears who the
 * review is for once its envelope is read and before the handler runs (the admission worker tells the main
 * thread, which can then still answer this uid if the worker dies in the handler).
 */
export function handleAdmissionReview(
  body: unknown,
  handler: AdmissionHandler,
  onRequest?: (who: ReviewIdentity) => void,
): AdmissionOutcome & { cause?: unknown } {
  if (!isObject(body)) return badRequest('request body is not a JSON object');
  const apiVersion = body.apiVersion;
  if (body.kind !== 'AdmissionReview') return badRequest(`expected kind AdmissionReview, got ${shown(body.kind)}`);
  if (!ADMISSION_VERSIONS.includes(apiVersion as AdmissionReviewVersion))
    return badRequest(`unsupported AdmissionReview apiVersion ${shown(apiVersion)}`);
  const req = body.request;
  if (!isObject(req) || typeof req.uid !== 'string' || req.uid === '')
    return badRequest('AdmissionReview has no request or no request.uid');
  if (!isObject(req.kind) || typeof req.operation !== 'string')
    return badRequest('AdmissionReview request has no kind or operation');
  // The apiserver sends only these (admission/v1 Operation); anything else is not a review of it: refused rather
  // than let through as an operation the webhook does not check.
  if (!OPERATIONS.includes(req.operation))
    return badRequest(`unknown request.operation ${shown(req.operation)}: expected one of ${OPERATIONS.join(', ')}`);
  const request = req as unknown as AdmissionRequest;
  const key = objectKey(request);
  onRequest?.({
    apiVersion: apiVersion as AdmissionReviewVersion,
    uid: request.uid,
    key,
    operation: request.operation,
  });
  let result: Response;
  let cause: unknown;
  try {
    result = handler(request);
  } catch (err) {
    cause = err;
    result = errored(500, 'internal error while handling the admission request');
  }
  const review: AdmissionReview = {
    apiVersion: apiVersion as AdmissionReviewVersion,
    kind: 'AdmissionReview',
    response: complete(result, request.uid),
  };
  const message = result.status?.message;
  return {
    httpStatus: 200,
    body: review,
    verdict: result.verdict,
    key,
    uid: request.uid,
    operation: request.operation,
    ...(message ? { message } : {}),
    ...(cause ? { cause } : {}),
  };
}

/** handleAdmissionReview's outcome with the body serialized: what the admission worker hands back. */
export interface SerializedOutcome extends AdmissionOutcome {
  /** The JSON text of `body`, sent as it is. */
  text: string;
  /** An unexpected failure of the handler, for the log (an Error does not survive the trip between threads). */
  cause?: { name: string; message: string; stack?: string };
}

/**
 * The whole admission work for one raw request body: parse, then handleAdmissionReview, then serialize. An empty
 * body or one that is not JSON gets a plain 400, as any other body that is no AdmissionReview.
 */
export function handleAdmissionText(
  text: string,
  handler: AdmissionHandler,
  onRequest?: (who: ReviewIdentity) => void,
): SerializedOutcome {
  let body: unknown;
  if (text.trim() === '') return serialized(badRequest('request body is empty'));
  try {
    body = JSON.parse(text);
  } catch {
    return serialized(badRequest('request body is not valid JSON'));
  }
  const { cause, ...out } = handleAdmissionReview(body, handler, onRequest);
  const err = cause instanceof Error ? cause : cause === undefined ? undefined : new Error(String(cause));
  return {
    ...serialized(out),
    ...(err ? { cause: { name: err.name, message: err.message, ...(err.stack ? { stack: err.stack } : {}) } } : {}),
  };
}

function serialized(out: AdmissionOutcome): SerializedOutcome {
  return { ...out, text: bodyText(out.body) };
}

/**
 * `JSON.stringify(body)`, with a patch's base64 put in as it is: base64 has no character JSON escapes, and
 * JSON.stringify scanning its few KiB was 7% of a mutate review in process. The patch is the last field of the
 * response and the response the last of the review (complete()), so the empty patch stood in for is the last
 * `"patch":""` of the text; a `"` inside any string before it is escaped, so it matches nothing else.
 */
function bodyText(body: AdmissionOutcome['body']): string {
  const response = 'response' in body ? body.response : undefined;
  if (response?.patch === undefined) return JSON.stringify(body);
  const text = JSON.stringify({ ...body, response: { ...response, patch: '' } });
  const at = text.lastIndexOf('"patch":""') + '"patch":"'.length;
  return text.slice(0, at) + response.patch + text.slice(at);
}
