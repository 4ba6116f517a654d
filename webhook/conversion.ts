// ConversionReview handling (the CRD conversion webhook, CONVERT_PATH) as pure functions: body in, HTTP status +
// serialized body + verdict out; app.ts times, counts and logs around them, on its own thread for small bodies and
// in the admission pool for large ones (see CONVERT_ON_MAIN_THREAD_MAX_BYTES there).
//
// As controller-runtime's conversion webhook
// (https://github.com/kubernetes-sigs/controller-runtime/blob/main/pkg/webhook/conversion/conversion.go): a body
// that is no ConversionReview, or one without a request, is answered HTTP 400; otherwise the answer is a
// ConversionReview of the same apiVersion with the request's uid, `convertedObjects` in the order of
// `request.objects` and `result.status: Success`, or, when one object cannot be converted, no objects and
// `result.status: Failure` with a message that names the object by index (the apiserver then fails the request
// that needed the conversion with that message). Nothing here throws: an unexpected error is a Failure too.
import { API_VERSION, API_VERSION_V1BETA1, isServedVersion } from '../src/api/constants.ts';
import { ConversionError, convertDaemonSet, type StashWarning } from '../src/api/conversion.ts';
import { isObject, type JsonObject } from '../src/api/defaults.ts';
import { jsonTypeName, nestingError } from '../src/api/shape.ts';

export const CONVERSION_REVIEW_VERSIONS = ['apiextensions.k8s.io/v1', 'apiextensions.k8s.io/v1beta1'] as const;
export type ConversionReviewVersion = (typeof CONVERSION_REVIEW_VERSIONS)[number];

/** The metrics' and logs' `verdict` of a conversion request. */
export type ConversionVerdict = 'converted' | 'failed' | 'errored';

/** One count of the conversions metric: objects from one version to another, converted or not. */
export interface ConversionCount {
  from: string;
  to: string;
  result: 'success' | 'failure';
  count: number;
}

/** What the HTTP layer sends back, and what it logs and counts. */
export interface ConversionOutcome {
  httpStatus: number;
  /** The JSON text of the body, sent as it is. */
  text: string;
  verdict: ConversionVerdict;
  uid?: string;
  desiredAPIVersion?: string;
  /** Objects in the request. */
  objects?: number;
  /** The Failure's (or the 400's) message, for logs. */
  message?: string;
  counts: ConversionCount[];
  /** An unexpected error, for the log (an Error does not survive the trip between threads). */
  cause?: { name: string; message: string; stack?: string };
  /** Stashed values left out because the target version cannot hold them (src/api/conversion.ts), for the log. */
  stashWarnings?: (StashWarning & { object: string })[];
}

const cut = (s: string): string => (s.length > 100 ? `${s.slice(0, 100)}...` : s);
const shown = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(cut(v)) : jsonTypeName(v));

/** The metrics' label of an object's version: a served version, or "unknown" (the label set stays bounded). */
function versionLabel(apiVersion: unknown): string {
  const version = typeof apiVersion === 'string' ? apiVersion.split('/')[1] : undefined;
  return isServedVersion(version) ? version : 'unknown';
}

/** A body that is no ConversionReview with a uid: HTTP 400 with a metav1.Status, whose message client-go shows. */
function badRequest(message: string): ConversionOutcome {
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'BadRequest',
    code: 400,
  };
  return { httpStatus: 400, text: JSON.stringify(status), verdict: 'errored', message, counts: [] };
}

/** Where each object's name is, for a message: namespace/name when readable. */
function objectName(o: unknown): string {
  const meta = isObject(o) && isObject(o.metadata) ? o.metadata : undefined;
  const name = typeof meta?.name === 'string' ? meta.name : '';
  const ns = typeof meta?.namespace === 'string' ? meta.namespace : '';
  return cut(ns ? `${ns}/${name}` : name);
}

/**
 * Converts every object of one ConversionReview request, in order. The first object that cannot be converted
 * fails the whole review, as in controller-runtime.
 */
function convertObjects(
  objects: readonly unknown[],
  to: string,
): {
  converted: JsonObject[];
  warnings: (StashWarning & { object: string })[];
  failure?: { index: number; message: string; cause?: unknown };
} {
  const converted: JsonObject[] = [];
  const warnings: (StashWarning & { object: string })[] = [];
  for (let i = 0; i < objects.length; i++) {
    const obj = objects[i];
    const name = objectName(obj);
    const where = `request.objects[${i}]${name ? ` (${name})` : ''}`;
    // The mapping only walks what it changes; the response's serialization walks everything, recursively.
    const deep = nestingError(obj);
    if (deep) return { converted, warnings, failure: { index: i, message: `${where}: ${deep.field}: ${deep.detail}` } };
    try {
      const found: StashWarning[] = [];
      converted.push(convertDaemonSet(obj, to, found));
      for (const w of found) warnings.push({ object: name, ...w });
    } catch (err) {
      if (err instanceof ConversionError)
        return { converted, warnings, failure: { index: i, message: `${where}: ${err.message}` } };
      const message = `${where}: internal error while converting`;
      return { converted, warnings, failure: { index: i, message, cause: err } };
    }
  }
  return { converted, warnings };
}

/** Handles one ConversionReview body (already JSON-parsed). */
export function handleConversionReview(body: unknown): ConversionOutcome {
  if (!isObject(body)) return badRequest(`request body is not a JSON object, but ${jsonTypeName(body)}`);
  const req = body.request;
  const uid = isObject(req) && typeof req.uid === 'string' && req.uid !== '' ? req.uid : undefined;
  if (!uid) {
    if (body.kind !== 'ConversionReview') return badRequest(`expected kind ConversionReview, got ${shown(body.kind)}`);
    return badRequest('the ConversionReview has no request or no request.uid');
  }
  const request = req as JsonObject;
  const apiVersion = CONVERSION_REVIEW_VERSIONS.includes(body.apiVersion as ConversionReviewVersion)
    ? (body.apiVersion as ConversionReviewVersion)
    : CONVERSION_REVIEW_VERSIONS[0];
  const desired = request.desiredAPIVersion;
  const objects = request.objects;
  const base = {
    uid,
    ...(typeof desired === 'string' ? { desiredAPIVersion: cut(desired) } : {}),
    ...(Array.isArray(objects) ? { objects: objects.length } : {}),
  };
  const answer = (response: JsonObject): string => JSON.stringify({ apiVersion, kind: 'ConversionReview', response });
  const failure = (message: string, counts: ConversionCount[] = [], cause?: unknown): ConversionOutcome => ({
    ...base,
    httpStatus: 200,
    text: answer({ uid, result: { metadata: {}, status: 'Failure', message } }),
    verdict: 'failed',
    message,
    counts,
    ...(cause === undefined ? {} : { cause: serializedError(cause) }),
  });

  // A uid is known from here on: whatever is wrong is this review's Failure, which the apiserver shows.
  if (body.kind !== 'ConversionReview') return failure(`expected kind ConversionReview, got ${shown(body.kind)}`);
  if (!CONVERSION_REVIEW_VERSIONS.includes(body.apiVersion as ConversionReviewVersion))
    return failure(
      `unsupported ConversionReview apiVersion ${shown(body.apiVersion)}: supported: ${CONVERSION_REVIEW_VERSIONS.join(', ')}`,
    );
  if (typeof desired !== 'string' || (desired !== API_VERSION && desired !== API_VERSION_V1BETA1))
    return failure(
      `request.desiredAPIVersion: Unsupported value: ${shown(desired)}: supported values: ${[API_VERSION, API_VERSION_V1BETA1].map((v) => `"${v}"`).join(', ')}`,
    );
  if (!Array.isArray(objects)) return failure(`request.objects must be an array, not ${jsonTypeName(objects)}`);

  const to = versionLabel(desired);
  const { converted, warnings, failure: failed } = convertObjects(objects, desired);
  if (failed) {
    const from = versionLabel(
      isObject(objects[failed.index]) ? (objects[failed.index] as JsonObject).apiVersion : undefined,
    );
    return failure(failed.message, [{ from, to, result: 'failure', count: 1 }], failed.cause);
  }
  const counts = new Map<string, number>();
  for (const o of objects) {
    const from = versionLabel((o as JsonObject).apiVersion);
    counts.set(from, (counts.get(from) ?? 0) + 1);
  }
  return {
    ...base,
    httpStatus: 200,
    text: answer({ uid, convertedObjects: converted, result: { metadata: {}, status: 'Success' } }),
    verdict: 'converted',
    counts: [...counts].map(([from, count]) => ({ from, to, result: 'success' as const, count })),
    ...(warnings.length > 0 ? { stashWarnings: warnings } : {}),
  };
}

function serializedError(err: unknown): NonNullable<ConversionOutcome['cause']> {
  const e = err instanceof Error ? err : new Error(String(err));
  return { name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) };
}

/**
 * The whole conversion work for one raw request body: parse, convert, serialize. Never throws: an empty body or
 * one that is not JSON is a 400; an unexpected error after the uid is read is that review's Failure.
 */
export function handleConversionText(text: string): ConversionOutcome {
  if (text.trim() === '') return badRequest('request body is empty');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return badRequest('request body is not valid JSON');
  }
  try {
    return handleConversionReview(body);
  } catch (err) {
    // Not reached by any input the tests found (fuzz.test.ts); a guard so that no body gets a 500.
    const uid = isObject(body) && isObject(body.request) ? body.request.uid : undefined;
    if (typeof uid !== 'string' || uid === '') return { ...badRequest('internal error'), cause: serializedError(err) };
    const message = 'internal error while converting';
    const apiVersion = CONVERSION_REVIEW_VERSIONS[0];
    const response = { uid, result: { metadata: {}, status: 'Failure', message } };
    return {
      httpStatus: 200,
      text: JSON.stringify({ apiVersion, kind: 'ConversionReview', response }),
      verdict: 'failed',
      uid,
      message,
      counts: [],
      cause: serializedError(err),
    };
  }
}
