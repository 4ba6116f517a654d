// The CustomResourceDefinition of apps.kruise.io DaemonSet with both served versions (v1alpha1 and v1beta1), built
// from the schemas in schema.ts, and that of advanced-daemonset.io DaemonSetSetting (one version), from setting.ts.
// gen-crd.ts writes both to the chart; the e2e suite applies crdObject() and settingCrdObject() directly.
import {
  API_GROUP,
  KIND,
  LIST_KIND,
  PLURAL,
  SERVED_VERSIONS,
  SHORT_NAMES,
  SINGULAR,
  STORAGE_VERSION,
  VERSION,
  type ServedVersion,
} from './constants.ts';
import { DAEMONSET_SCHEMAS } from './schema.ts';
import {
  DaemonSetSettingSchema,
  SETTING_API_GROUP,
  SETTING_CONDITION_CONFLICTING,
  SETTING_CONDITION_VALID,
  SETTING_KIND,
  SETTING_LIST_KIND,
  SETTING_PLURAL,
  SETTING_RESOURCE,
  SETTING_SHORT_NAMES,
  SETTING_SINGULAR,
  SETTING_VERSION,
} from './setting.ts';

/** Keys TypeBox may leave that a CRD schema does not accept. Symbol keys ([Kind] etc.) vanish in the JSON round trip. */
const TYPEBOX_ONLY_KEYS = new Set(['$id', '$schema', 'static', 'params']);

function stripTypeBoxKeys(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripTypeBoxKeys);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (TYPEBOX_ONLY_KEYS.has(k)) continue;
    // `properties` maps field names to schemas: recurse into values, keep every name.
    out[k] = k === 'description' && typeof v === 'string' ? unwrapDescription(v) : stripTypeBoxKeys(v);
  }
  return out;
}

/**
 * A description with its hard line breaks within paragraphs joined: `kubectl explain` wraps descriptions to the
 * terminal itself, and a source wrapped at another width rendered ragged. Blank lines and lines that start a list
 * item are kept.
 */
export function unwrapDescription(text: string): string {
  return text.replace(/([^\n])\n(?![\n\s]*(?:[-*]\s|\d+\.\s))(?=[^\n])/g, '$1 ');
}

/** The structural openAPIV3Schema of a served version (v1alpha1 when not given). */
export function openAPIV3Schema(version: ServedVersion = VERSION): Record<string, unknown> {
  const source = DAEMONSET_SCHEMAS[version];
  if (!source) throw new Error(`no DaemonSet schema for version ${String(version)}`);
  return structuralSchema(source);
}

/** The structural openAPIV3Schema of DaemonSetSetting (its one version). */
export function settingOpenAPIV3Schema(): Record<string, unknown> {
  return structuralSchema(DaemonSetSettingSchema);
}

function structuralSchema(source: unknown): Record<string, unknown> {
  const schema = stripTypeBoxKeys(JSON.parse(JSON.stringify(source))) as Record<string, unknown>;
  // metadata is always present and validated by the apiserver; listing it as required is noise.
  const requiredRoot = (schema.required as string[] | undefined)?.filter((k) => k !== 'metadata');
  if (requiredRoot?.length) schema.required = requiredRoot;
  else delete schema.required;
  return schema;
}

const printerColumns = [
  { name: 'DESIRED', type: 'integer', jsonPath: '.status.desiredNumberScheduled', description: 'The desired number of pods.' },
  { name: 'CURRENT', type: 'integer', jsonPath: '.status.currentNumberScheduled', description: 'The current number of pods.' },
  { name: 'READY', type: 'integer', jsonPath: '.status.numberReady', description: 'The ready number of pods.' },
  { name: 'UP-TO-DATE', type: 'integer', jsonPath: '.status.updatedNumberScheduled', description: 'The updated number of pods.' },
  { name: 'AVAILABLE', type: 'integer', jsonPath: '.status.numberAvailable', description: 'The available number of pods.' },
  { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Time since the DaemonSet was created.' },
  { name: 'CONTAINERS', type: 'string', priority: 1, jsonPath: '.spec.template.spec.containers[*].name', description: 'The containers of the pod template.' },
  { name: 'IMAGES', type: 'string', priority: 1, jsonPath: '.spec.template.spec.containers[*].image', description: 'The images of the pod template.' },
  // As apps/v1's -o wide; a CRD column prints the selector as JSON, where kubectl formats the built-in kind's.
  { name: 'SELECTOR', type: 'string', priority: 1, jsonPath: '.spec.selector', description: 'The label selector of the pods.' },
  { name: 'CANARY', type: 'string', priority: 1, jsonPath: '.status.canary.phase', description: 'The phase of the canary of the latest revision: Observing, Paused, Failed or Promoted.' },
]; // prettier-ignore

/**
 * Where the apiserver sends ConversionReviews: apiextensions.k8s.io/v1 WebhookClientConfig (a Service or a URL,
 * plus the CA bundle, base64 PEM, that signs the webhook's serving certificate).
 */
export interface ConversionClientConfig {
  service?: { namespace: string; name: string; path?: string; port?: number };
  url?: string;
  caBundle?: string;
}

export interface CrdOptions {
  /** The version objects are stored in (default v1beta1, as Kruise 1.9); one of `servedVersions`. */
  storageVersion?: ServedVersion;
  /**
   * The versions the apiserver serves (default both). A version left out stays in the CRD, not served, so objects
   * stored in it are still read and converted (the apiserver refuses to drop a version status.storedVersions lists).
   */
  servedVersions?: readonly ServedVersion[];
  /** With a client config, conversion strategy Webhook through it; without, strategy None. */
  conversion?: ConversionClientConfig;
}

/** The CRD as a plain object, ready to apply: every served version, one of them the storage version. */
export function crdObject(opts: CrdOptions = {}): Record<string, unknown> {
  const storageVersion = opts.storageVersion ?? STORAGE_VERSION;
  const served = opts.servedVersions ?? SERVED_VERSIONS;
  if (!served.includes(storageVersion) || !SERVED_VERSIONS.includes(storageVersion))
    throw new Error(`storage version ${String(storageVersion)} is not served (${served.join(', ')})`);
  const conversion = opts.conversion
    ? {
        strategy: 'Webhook',
        // apiextensions.k8s.io/v1 ConversionReview is all the /convert handler speaks.
        webhook: { conversionReviewVersions: ['v1'], clientConfig: opts.conversion },
      }
    : { strategy: 'None' };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${API_GROUP}` },
    spec: {
      group: API_GROUP,
      names: { kind: KIND, listKind: LIST_KIND, plural: PLURAL, singular: SINGULAR, shortNames: [...SHORT_NAMES] },
      scope: 'Namespaced',
      conversion,
      versions: SERVED_VERSIONS.map((name) => ({
        name,
        served: served.includes(name),
        storage: name === storageVersion,
        schema: { openAPIV3Schema: openAPIV3Schema(name) },
        subresources: { status: {} },
        // A copy per version: a shared object would become a YAML anchor and alias in the chart file.
        additionalPrinterColumns: printerColumns.map((c) => ({ ...c })),
      })),
    },
  };
}

/** A condition's status by type, as kubectl prints a built-in kind's conditions (e.g. a Node's Ready). */
const conditionColumn = (type: string) => `.status.conditions[?(@.type=="${type}")].status`;

const settingPrinterColumns = [
  { name: 'REFERENCE', type: 'string', jsonPath: '.spec.reference.name', description: 'The DaemonSet whose pods get these resources.' },
  { name: 'NODES', type: 'integer', jsonPath: '.status.nodes', description: 'How many nodes that run the DaemonSet the selector matches.' },
  { name: 'VALID', type: 'string', jsonPath: conditionColumn(SETTING_CONDITION_VALID), description: 'Whether the DaemonSet exists and has every container named.' },
  { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Time since the DaemonSetSetting was created.' },
  { name: 'CONFLICTING', type: 'string', priority: 1, jsonPath: conditionColumn(SETTING_CONDITION_CONFLICTING), description: 'Whether another setting of the same DaemonSet sets the same container on some node.' },
]; // prettier-ignore

/**
 * The DaemonSetSetting CRD as a plain object, ready to apply: one version, so no conversion (strategy None), and
 * the status subresource, so the controller's status writes and users' spec writes never overwrite each other.
 */
export function settingCrdObject(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: SETTING_RESOURCE },
    spec: {
      group: SETTING_API_GROUP,
      names: {
        kind: SETTING_KIND,
        listKind: SETTING_LIST_KIND,
        plural: SETTING_PLURAL,
        singular: SETTING_SINGULAR,
        shortNames: [...SETTING_SHORT_NAMES],
      },
      scope: 'Namespaced',
      conversion: { strategy: 'None' },
      versions: [
        {
          name: SETTING_VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: settingOpenAPIV3Schema() },
          subresources: { status: {} },
          additionalPrinterColumns: settingPrinterColumns.map((c) => ({ ...c })),
        },
      ],
    },
  };
}
